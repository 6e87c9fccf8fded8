package main

import (
	"bufio"
	"context"
	"io"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// checkFastAnswers asks the fast backend at addr, holding players 0…n−1, for a few of them
// and for one it does not hold, and checks every answer.
func checkFastAnswers(t *testing.T, addr string, n int) {
	t.Helper()
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	stub := networkpb.NewDataServiceClient(cc)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, i := range []int{0, 1, n / 2, n - 1, 0} { // player 0 twice: the table is not used up
		resp, err := stub.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: xuidOf(i)})
		if err != nil {
			t.Fatalf("GetPlayer of player %d: %v", i, err)
		}
		if err := checkResponse(i, playerOf(i), resp); err != nil {
			t.Error(err)
		}
	}
	resp, err := stub.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: xuidOf(n)})
	if err != nil || resp.GetFound() || resp.GetPlayer() != nil {
		t.Errorf("GetPlayer of player %d, which it does not hold: %v, %v; want not found", n, resp, err)
	}
	// It serves GetPlayer alone: nothing else is implemented.
	if _, err := stub.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: playerOf(0)}); status.Code(err) != codes.Unimplemented {
		t.Errorf("SavePlayer: %v, want Unimplemented", err)
	}
}

// TestFastBackend starts the fast backend on loopback and checks its answers.
func TestFastBackend(t *testing.T) {
	const n = 50
	f, err := startFastBackend(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	defer f.stop()
	checkFastAnswers(t, f.addr, n)
}

// TestStartBackendFast checks that the in-process backends include the fast backend exactly
// when it holds players, on a port of its own.
func TestStartBackendFast(t *testing.T) {
	for _, players := range []int{0, 20} {
		be, err := startBackend(context.Background(), true, -1, players, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if be.addrOf(backendData) != be.addr || be.addrOf(backendFast) != be.fastAddr {
			t.Errorf("addrOf: %q and %q, want %q and %q", be.addrOf(backendData), be.addrOf(backendFast), be.addr, be.fastAddr)
		}
		switch {
		case players == 0 && be.fastAddr != "":
			t.Errorf("no players, yet a fast backend at %s", be.fastAddr)
		case players > 0 && (be.fastAddr == "" || be.fastAddr == be.addr):
			t.Errorf("fast backend at %q, data service at %q; want two ports", be.fastAddr, be.addr)
		case players > 0:
			checkFastAnswers(t, be.fastAddr, players)
		}
		if err := be.stop(); err != nil {
			t.Fatal(err)
		}
	}
}

// TestServeBackendFast runs the child process's part in this one: with -fast-players it
// reports both addresses, serves the fast backend, and returns once its stdin closes.
func TestServeBackendFast(t *testing.T) {
	const n = 30
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := serveBackend([]string{"-fast-players", "30"}, stdinR, stdoutW)
		stdoutW.CloseWithError(io.ErrUnexpectedEOF)
		done <- err
	}()
	defer stdinW.Close() // if the test fails before it closes stdin itself
	line, err := bufio.NewReader(stdoutR).ReadString('\n')
	if err != nil {
		t.Fatalf("reading the listening line: %v (read %q)", err, line)
	}
	addr, fastAddr, ok := parseListening(line)
	if !ok || addr == "" || fastAddr == "" || addr == fastAddr {
		t.Fatalf("listening line %q: data service %q, fast backend %q, ok %v", line, addr, fastAddr, ok)
	}
	checkFastAnswers(t, fastAddr, n)
	stdinW.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("serveBackend: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("serveBackend did not return when its stdin closed")
	}
}

func TestListeningLine(t *testing.T) {
	for _, c := range []struct{ addr, fast, line string }{
		{"127.0.0.1:1", "", "listening 127.0.0.1:1\n"},
		{"127.0.0.1:1", "127.0.0.1:2", "listening 127.0.0.1:1 fast 127.0.0.1:2\n"},
	} {
		line := listeningLine(c.addr, c.fast)
		addr, fast, ok := parseListening(line)
		if line != c.line || !ok || addr != c.addr || fast != c.fast {
			t.Errorf("listeningLine(%q, %q) = %q, parsed as %q, %q, %v", c.addr, c.fast, line, addr, fast, ok)
		}
	}
	for _, bad := range []string{"", "listening\n", "serving 127.0.0.1:1\n", "listening 127.0.0.1:1 slow 127.0.0.1:2\n", "listening 127.0.0.1:1 fast\n"} {
		if addr, fast, ok := parseListening(bad); ok {
			t.Errorf("parseListening(%q) = %q, %q, true; want false", bad, addr, fast)
		}
	}
}
