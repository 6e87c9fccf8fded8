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

// backend is the GetPlayer backend: the data-service example with its in-memory store, either
// in a child process (the burst binary re-executed with serveBackendFlag) or in this one.
type backend struct {
	addr  string
	srv   *server.Server // in-process
	cmd   *exec.Cmd      // separate process
	stdin io.WriteCloser
	exit  chan error // the child's exit status, once
}

// startBackend starts the backend in this process if inprocess, else in a child process
// pinned to cpu (if cpu ≥ 0).
func startBackend(ctx context.Context, inprocess bool, cpu int, stderr io.Writer) (*backend, error) {
	if inprocess {
		srv, err := server.Start(ctx, server.Options{Addr: "127.0.0.1:0"})
		if err != nil {
			return nil, err
		}
		return &backend{addr: srv.Addr(), srv: srv}, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("finding the burst binary to re-execute: %w", err)
	}
	cmd := exec.Command(exe, serveBackendFlag, "-cpu", fmt.Sprint(cpu))
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the backend process: %w", err)
	}
	b := &backend{cmd: cmd, stdin: stdin, exit: make(chan error, 1)}
	line, readErr := bufio.NewReader(stdout).ReadString('\n')
	go func() { b.exit <- cmd.Wait() }()
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening ")
	if readErr != nil || !ok {
		_ = b.stop()
		return nil, fmt.Errorf("the backend process did not report its address (read %q: %v)", line, readErr)
	}
	b.addr = addr
	return b, nil
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
// loopback port with an in-memory store, prints "listening <addr>" on stdout, and stops when
// stdin closes, so that it never outlives the burst that started it.
func serveBackend(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("burst "+serveBackendFlag, flag.ContinueOnError)
	cpu := fs.Int("cpu", -1, "pin every thread of this process to CPU `n` (Linux; -1: do not pin)")
	if err := fs.Parse(args); err != nil {
		return err
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
	if _, err := fmt.Fprintf(stdout, "listening %s\n", srv.Addr()); err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, stdin)
	return nil
}
