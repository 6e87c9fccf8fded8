package main

// The stream scenario's server apart from the client: in a pinned placement, the policies
// suite's stream scenario receives from a server of the test service in a process of its own,
// the burst binary re-executed and pinned as the backends are, so that the CPU the client is
// pinned to runs the client alone.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
	"github.com/trixnew/prpc/internal/testpb"
)

// serveStreamFlag, as the first argument, makes the burst binary serve the test service
// (policybench.StartServer) instead, whose Watch streams: how the pinned placement starts the
// stream scenario's server in a process of its own. It is not in the usage text.
const serveStreamFlag = "-serve-stream"

// children are the burst binary's modes as a child process, by their first argument: each
// serves until its stdin closes.
var children = map[string]func(args []string, stdin io.Reader, stdout io.Writer) error{
	serveBackendFlag: serveBackend,
	serveStreamFlag:  serveStream,
}

// startStreamServer starts the stream scenario's server in a child process pinned to cpu (if
// cpu ≥ 0) and returns it, listening at its addr; stop stops it.
func startStreamServer(cpu int, stderr io.Writer) (*backend, error) {
	b, line, err := startChild(stderr, serveStreamFlag, "-cpu", fmt.Sprint(cpu))
	if err != nil {
		return nil, err
	}
	addr, fastAddr, ok := parseListening(line)
	if !ok || fastAddr != "" {
		_ = b.stop()
		return nil, fmt.Errorf("the stream server's process did not report its address (read %q)", line)
	}
	b.addr = addr
	return b, nil
}

// serveStream is startStreamServer's child process: it serves the test service on an
// ephemeral loopback port, prints its address on stdout (listeningLine), and stops when
// stdin closes, so that it never outlives the burst that started it.
func serveStream(args []string, stdin io.Reader, stdout io.Writer) error {
	fs := flag.NewFlagSet("burst "+serveStreamFlag, flag.ContinueOnError)
	cpu := fs.Int("cpu", -1, "pin every thread of this process to CPU `n` (Linux; -1: do not pin)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", args)
	}
	if *cpu >= 0 {
		runtime.GOMAXPROCS(1)
		if err := pinProcess(*cpu); err != nil {
			return err
		}
	}
	srv, err := policybench.StartServer(func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	if err != nil {
		return err
	}
	if _, err := io.WriteString(stdout, listeningLine(srv.Addr(), "")); err != nil {
		return errors.Join(err, srv.Stop())
	}
	_, _ = io.Copy(io.Discard, stdin)
	return srv.Stop()
}
