package main

import (
	"bufio"
	"io"
	"testing"
	"time"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
)

// TestServeStream runs the stream server's child process part in this one: it reports one
// address, serves the stream scenario's streams there, and returns once its stdin closes.
func TestServeStream(t *testing.T) {
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serveStream(nil, stdinR, stdoutW)
		stdoutW.CloseWithError(io.ErrUnexpectedEOF)
		done <- err
	}()
	defer stdinW.Close() // if the test fails before it closes stdin itself
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the listening line: %v (read %q)", err, line)
	}
	addr, fastAddr, ok := parseListening(line)
	if !ok || addr == "" || fastAddr != "" {
		t.Fatalf("listening line %q: address %q, fast backend %q, ok %v; want one address", line, addr, fastAddr, ok)
	}
	cfg := policybench.DefaultStream().Short()
	cfg.Addr = addr
	if res, err := policybench.RunStream(cfg); err != nil || res.Messages != cfg.Messages {
		t.Errorf("a stream from the server: %v, %d messages, want %d", err, res.Messages, cfg.Messages)
	}
	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveStream: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveStream did not return when its stdin closed")
	}
	if err := serveStream([]string{"extra"}, stdinR, io.Discard); err == nil {
		t.Error("serveStream with an unexpected argument: no error")
	}
}
