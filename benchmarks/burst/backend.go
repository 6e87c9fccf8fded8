package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/server"
)

// serveBackendFlag, as the first argument, makes the burst binary serve the backend instead:
// it is how the burst starts its backend in a separate process. It is not in the usage text.
const serveBackendFlag = "-serve-backend"

// backend is the GetPlayer backends: the data-service example with its in-memory store and,
// if asked for, the fast backend (fastbackend.go) on a second port, both either in a child
// process (the burst binary re-executed with serveBackendFlag) or in this one. The burst
// suites run against one of them at a time, so the child's CPU time over a trial is the
// CPU time of the backend the trial used.
type backend struct {
	addr     string         // the data service's
	fastAddr string         // the fast backend's, if it runs
	srv      *server.Server // in-process
	fast     *fastBackend   // in-process, if it runs
	cmd      *exec.Cmd      // separate process
	stdin    io.WriteCloser
	exit     chan error // the child's exit status, once
}

// startBackend starts the backends in this process if inprocess, else in a child process
// pinned to cpu (if cpu ≥ 0): the data service, and the fast backend holding players
// 0…fastPlayers−1 if fastPlayers > 0.
func startBackend(ctx context.Context, inprocess bool, cpu, fastPlayers int, stderr io.Writer) (*backend, error) {
	if inprocess {
		srv, err := server.Start(ctx, server.Options{Addr: "127.0.0.1:0"})
		if err != nil {
			return nil, err
		}
		b := &backend{addr: srv.Addr(), srv: srv}
		if fastPlayers > 0 {
			if b.fast, err = startFastBackend(ctx, fastPlayers); err != nil {
				srv.Stop()
				return nil, err
			}
			b.fastAddr = b.fast.addr
		}
		return b, nil
	}
	b, line, err := startChild(stderr, serveBackendFlag, "-cpu", fmt.Sprint(cpu), "-fast-players", fmt.Sprint(fastPlayers))
	if err != nil {
		return nil, err
	}
	addr, fastAddr, ok := parseListening(line)
	if !ok || (fastPlayers > 0) != (fastAddr != "") {
		_ = b.stop()
		return nil, fmt.Errorf("the backend process did not report its addresses (read %q)", line)
	}
	b.addr, b.fastAddr = addr, fastAddr
	return b, nil
}

// startChild starts the burst binary re-executed with args, its stderr going to stderr, and
// returns it with the first line it printed on its stdout, where a child reports what it
// serves; it stops the child if it printed no whole line.
func startChild(stderr io.Writer, args ...string) (*backend, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", fmt.Errorf("finding the burst binary to re-execute: %w", err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, "", err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("starting the backend process: %w", err)
	}
	b := &backend{cmd: cmd, stdin: stdin, exit: make(chan error, 1)}
	line, readErr := bufio.NewReader(stdout).ReadString('\n')
	go func() { b.exit <- cmd.Wait() }()
	if readErr != nil {
		_ = b.stop()
		return nil, "", fmt.Errorf("the backend process did not report its addresses (read %q: %v)", line, readErr)
	}
	return b, line, nil
}

// listeningLine is what the child process prints once it serves: the data service's address,
// then the fast backend's, if it runs.
func listeningLine(addr, fastAddr string) string {
	if fastAddr == "" {
		return "listening " + addr + "\n"
	}
	return "listening " + addr + " fast " + fastAddr + "\n"
}

// parseListening parses a listeningLine.
func parseListening(line string) (addr, fastAddr string, ok bool) {
	f := strings.Fields(line)
	switch {
	case len(f) == 2 && f[0] == "listening":
		return f[1], "", true
	case len(f) == 4 && f[0] == "listening" && f[2] == "fast":
		return f[1], f[3], true
	}
	return "", "", false
}

// addrOf returns the address of the backend of kind (backendData or backendFast).
func (b *backend) addrOf(kind string) string {
	if kind == backendFast {
		return b.fastAddr
	}
	return b.addr
}

// pid returns the backend process's id, or 0 if it runs in this process.
func (b *backend) pid() int {
	if b == nil || b.cmd == nil {
		return 0
	}
	return b.cmd.Process.Pid
}

// cpu returns the CPU time the backend process has used so far, if it is a separate process
// and the OS tells.
func (b *backend) cpu() (time.Duration, bool) {
	if b.pid() == 0 {
		return 0, false
	}
	return processCPU(b.pid())
}

// stop stops the backend: a child process exits when its stdin closes, and is killed if it
// has not within 10 s.
func (b *backend) stop() error {
	if b.srv != nil {
		if b.fast != nil {
			b.fast.stop()
		}
		b.srv.Stop()
		return nil
	}
	_ = b.stdin.Close()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case err := <-b.exit:
		return err
	case <-t.C:
		_ = b.cmd.Process.Kill()
		return errors.Join(errors.New("the backend process did not exit when its stdin closed; killed"), <-b.exit)
	}
}

// serveBackend is the child process: it serves the data-service backend on an ephemeral
// loopback port with an in-memory store and, with -fast-players, the fast backend on another,
// prints their addresses on stdout (listeningLine), and stops when stdin closes, so that it
// never outlives the burst that started it.
func serveBackend(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("burst "+serveBackendFlag, flag.ContinueOnError)
	cpu := fs.Int("cpu", -1, "pin every thread of this process to CPU `n` (Linux; -1: do not pin)")
	fastPlayers := fs.Int("fast-players", 0, "also serve the fast backend, holding players 0…`n`−1 (0: do not)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 || *fastPlayers < 0 {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	if *cpu >= 0 {
		runtime.GOMAXPROCS(1)
		if err := pinProcess(*cpu); err != nil {
			return err
		}
	}
	srv, err := server.Start(context.Background(), server.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		return err
	}
	defer srv.Stop()
	var fastAddr string
	if *fastPlayers > 0 {
		fast, err := startFastBackend(context.Background(), *fastPlayers)
		if err != nil {
			return err
		}
		defer fast.stop()
		fastAddr = fast.addr
	}
	if _, err := io.WriteString(stdout, listeningLine(srv.Addr(), fastAddr)); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}
