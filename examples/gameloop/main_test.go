package main

import (
	"bytes"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"

	pb "github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/server"
	"github.com/trixnew/prpc/examples/dataservice/store"
	"github.com/trixnew/prpc/internal/testcerts"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// result is what one run of the program produced.
type result struct {
	code           int
	stdout, stderr string
}

// runGame runs the program with args until it exits.
func runGame(ctx context.Context, args ...string) result {
	var stdout, stderr bytes.Buffer
	code := run(ctx, args, &stdout, &stderr)
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// requirePassed checks that a run exited 0 with a summary and a passed verification.
func requirePassed(t *testing.T, res result) {
	t.Helper()
	t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr) // shown with -v
	require.Equal(t, 0, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	assert.Contains(t, res.stdout, "--- summary ---")
	assert.Regexp(t, `calls +submitted (\d+), succeeded (\d+), failed 0, pending 0`, res.stdout)
	assert.Contains(t, res.stdout, "verification passed: ")
	assert.NotContains(t, res.stderr, "FAILED")
}

// counter returns the number that follows label in the output, failing the test if absent.
func counter(t *testing.T, out, label string) int {
	t.Helper()
	m := regexp.MustCompile(regexp.QuoteMeta(label) + ` (\d+)`).FindStringSubmatch(out)
	require.NotNil(t, m, "%q not in output:\n%s", label, out)
	n, err := strconv.Atoi(m[1])
	require.NoError(t, err)
	return n
}

func TestRunEmbeddedBackend(t *testing.T) {
	t.Parallel()
	res := runGame(t.Context(), "-duration", "2s", "-players", "20", "-autosave", "500ms")
	requirePassed(t, res)
	assert.Contains(t, res.stdout, "in-process data service")
	assert.Regexp(t, `(?m)^t=1s TPS [\d.]+ tick p99 \S+ \| RPC \d+/s p99 \S+ \| pending \d+ \| online \d+ \| errors 0$`, res.stdout)
	assert.Equal(t, 20, counter(t, res.stdout, "verification passed:"), "every player read back")
	// Every player joined (joins are spread over the first 2 s of a 2 s run, and the ones
	// still loading at the stop are abandoned), and some saved.
	assert.Positive(t, counter(t, res.stdout, "saves      ok"))
	// The leaderboard's stream delivered boards as saves changed it, and ended once, cancelled
	// as the game stopped (a failure of requirePassed otherwise).
	assert.Positive(t, counter(t, res.stdout, "stream     the leaderboard:"))
	assert.Contains(t, res.stdout, "WatchLeaderboard: Canceled: stream cancelled")
}

func TestRunExternalTarget(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(t.Context(), server.Options{})
	require.NoError(t, err)
	defer srv.Stop()

	res := runGame(t.Context(), "-target", srv.Addr(), "-duration", "2500ms", "-players", "10",
		"-autosave", "300ms", "-workers", "3", "-batch", "2", "-seed", "7")
	requirePassed(t, res)
	assert.NotContains(t, res.stdout, "in-process data service")
	st := srv.Stats()
	assert.Positive(t, st.Saves, "the external backend received the saves")
	assert.Equal(t, uint64(counter(t, res.stdout, "saves      ok")), st.Saves)

	// A second run against the same backend finds the profiles of the first: every player
	// joined the first run (joins are spread over its first 2 s) and saved when leaving.
	res = runGame(t.Context(), "-target", srv.Addr(), "-duration", "1s", "-players", "10", "-seed", "8")
	requirePassed(t, res)
	assert.Positive(t, counter(t, res.stdout, "found"))
	assert.Zero(t, counter(t, res.stdout, "new"))
}

func TestRunFailsWhenBackendIsDown(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close()) // nothing listens there now

	start := time.Now()
	res := runGame(t.Context(), "-target", addr, "-duration", "1s", "-players", "5")
	require.Equal(t, 1, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	assert.Contains(t, res.stderr, "gameloop: FAILED: ")
	assert.Regexp(t, `\d+ calls failed \(Unavailable \d+\)`, res.stderr)
	assert.Contains(t, res.stderr, "verification failed")
	assert.Contains(t, res.stdout, "verification FAILED")
	// Generous bound (1 s of play, then failing fast), stated so a hang shows.
	assert.Less(t, time.Since(start), 8*time.Second)
}

// stall, as the delay of startSlowBackend, holds every SavePlayer until its call is cancelled.
const stall time.Duration = -1

// startSlowBackend serves the DataService with every SavePlayer delayed by delay (or held
// until cancelled, with stall), so that saves are in flight when players leave and when the
// game stops. A SavePlayer cancelled while held stores nothing.
func startSlowBackend(t *testing.T, delay time.Duration) string {
	t.Helper()
	return startBackend(t, func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if info.FullMethod == pb.DataService_SavePlayer_FullMethodName {
			var elapsed <-chan time.Time // nil, which never fires, with stall
			if delay != stall {
				timer := time.NewTimer(delay)
				defer timer.Stop()
				elapsed = timer.C
			}
			select {
			case <-elapsed:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return h(ctx, req)
	})
}

// startBackend serves the DataService, over an in-memory store, on an ephemeral loopback
// port, through interceptor, until the test ends, and returns its address.
func startBackend(t *testing.T, interceptor grpc.UnaryServerInterceptor) string {
	t.Helper()
	st, err := store.Open(t.Context(), "")
	require.NoError(t, err)
	gs := grpc.NewServer(grpc.UnaryInterceptor(interceptor))
	pb.RegisterDataServiceServer(gs, server.NewService(st, nil))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(ln)
	}()
	t.Cleanup(func() {
		gs.Stop()
		<-done
		require.NoError(t, st.Close())
	})
	return ln.Addr().String()
}

// Cancelling the context (what Ctrl-C does) stops the game gracefully: the players leave,
// saves in flight complete, the final saves queued behind them are sent and complete too,
// and the verification reads back exactly the last saves.
func TestRunCancelledSavesBeforeExit(t *testing.T) {
	t.Parallel()
	// Saves take 200 ms and are due every 50 ms, so a player is saving most of the time: at
	// the stop, most online players leave with a save in flight and queue their final one.
	addr := startSlowBackend(t, 200*time.Millisecond)
	ctx, cancel := context.WithCancel(t.Context())
	timer := time.AfterFunc(1500*time.Millisecond, cancel)
	defer timer.Stop()
	defer cancel()

	res := runGame(ctx, "-target", addr, "-duration", "0", "-players", "20", "-autosave", "50ms", "-workers", "4", "-batch", "8")
	requirePassed(t, res)
	assert.Contains(t, res.stderr, "stopping (interrupted)")
	assert.Positive(t, counter(t, res.stdout, "final saves queued behind a save:"))
	assert.Positive(t, counter(t, res.stdout, "autosaves skipped:"))
	// The final saves in flight at the stop settled in the drain, and closing cut nothing off.
	assert.Positive(t, counter(t, res.stdout, "at shutdown:"), "calls delivered by the drain")
	assert.Zero(t, counter(t, res.stdout, "delivered by the drain,"), "calls cut off")
}

// A drain that does not end within the shutdown timeout is cut short: closing the reactor
// cuts off the saves still in flight, the summary counts them, and the run fails saying so.
func TestPlayFailsWhenDrainTimesOut(t *testing.T) {
	t.Parallel()
	// Every save is held until cancelled. Its deadline (the reactor's DefaultTimeout) is far
	// beyond the end of the drain, so only closing the reactor ends the saves of the stop.
	addr := startSlowBackend(t, stall)
	cfg, err := parseFlags([]string{"-target", addr, "-duration", "500ms", "-players", "10", "-autosave", "100ms"}, io.Discard)
	require.NoError(t, err)
	cfg.drainTimeout = 200 * time.Millisecond

	start := time.Now()
	res, _ := playConfig(t.Context(), &cfg, nil)
	t.Logf("stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr) // shown with -v
	require.Equal(t, 1, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	// Generous bound (0.5 s of play, 0.2 s of drain, then a fast read-back), stated so a hang
	// shows.
	assert.Less(t, time.Since(start), 5*time.Second)

	// Joins spread over 2 s: in 0.5 s some players joined, and all their saves were held.
	assert.Zero(t, counter(t, res.stdout, "saves      ok"))
	cutOff := counter(t, res.stdout, "delivered by the drain,")
	assert.Positive(t, cutOff, "calls cut off")
	assert.Regexp(t, `calls +submitted \d+, succeeded \d+, failed \d+ \([^)]*Canceled \d+\), pending 0`, res.stdout)
	assert.Contains(t, res.stderr, fmt.Sprintf(
		"gameloop: FAILED: the shutdown drain timed out after 200ms and closing the reactor cut %d calls off: ", cutOff))
}

// playGame plays the game of args against srv, the in-process backend, until it ends, and
// reports whether play called stopSignals.
func playGame(t *testing.T, ctx context.Context, srv *server.Server, args ...string) (res result, signalsStopped bool) {
	t.Helper()
	cfg, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	return playConfig(ctx, &cfg, srv)
}

// playConfig plays the game cfg describes against srv, the in-process backend (or
// cfg.target if srv is nil), until it ends, and reports whether play called stopSignals.
func playConfig(ctx context.Context, cfg *config, srv *server.Server) (res result, signalsStopped bool) {
	var stdout, stderr bytes.Buffer
	res.code = play(ctx, func() { signalsStopped = true }, cfg, srv, &stdout, &lockedWriter{w: &stderr})
	res.stdout, res.stderr = stdout.String(), stderr.String()
	return res, signalsStopped
}

// The in-process backend stopping during the game stops the game, which then fails and says
// why; it is not mistaken for an interruption.
func TestPlayStopsWhenBackendStops(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(t.Context(), server.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	timer := time.AfterFunc(500*time.Millisecond, srv.Stop)
	defer timer.Stop()
	// Without the watch on the backend, the game would play on until this deadline.
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()

	res, signalsStopped := playGame(t, ctx, srv, "-duration", "0", "-players", "5")
	require.Equal(t, 1, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	assert.Contains(t, res.stderr, "gameloop: stopping (the in-process data service stopped serving)")
	assert.Contains(t, res.stderr, "gameloop: FAILED: the in-process data service stopped serving")
	assert.False(t, signalsStopped, "the default signal behaviour is restored only after a signal")
}

// Once ctx is done (the first Ctrl-C), play restores the default signal behaviour, so that a
// second Ctrl-C kills the process, and still stops the game gracefully.
func TestPlayRestoresSignalsWhenInterrupted(t *testing.T) {
	t.Parallel()
	srv, err := server.Start(t.Context(), server.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()

	res, signalsStopped := playGame(t, ctx, srv, "-duration", "0", "-players", "5")
	requirePassed(t, res)
	assert.Contains(t, res.stderr, "gameloop: stopping (interrupted)")
	assert.True(t, signalsStopped)
}

func TestRunMutualTLS(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ca := testcerts.NewCA(t, "ca")
	caFile := ca.WriteFile(t, dir, "ca")
	// For the name dataservice.test only: the client must be told it (-tls-server-name).
	srvCert, srvKey := ca.Issue(t, "server", testcerts.Options{
		DNSNames: []string{"dataservice.test"}, Usage: x509.ExtKeyUsageServerAuth,
	}).WriteFiles(t, dir, "server")
	clientCert, clientKey := ca.Client(t, "client").WriteFiles(t, dir, "client")
	srv, err := server.Start(t.Context(), server.Options{
		TLSCertFile: srvCert, TLSKeyFile: srvKey, ClientCAFile: caFile,
	})
	require.NoError(t, err)
	defer srv.Stop()

	res := runGame(t.Context(), "-target", srv.Addr(), "-duration", "1s", "-players", "5",
		"-tls-ca", caFile, "-tls-cert", clientCert, "-tls-key", clientKey,
		"-tls-server-name", "dataservice.test")
	requirePassed(t, res)
	assert.Positive(t, srv.Stats().Saves)

	// Without the client certificate the server refuses the connection.
	res = runGame(t.Context(), "-target", srv.Addr(), "-duration", "500ms", "-players", "2",
		"-tls-ca", caFile, "-tls-server-name", "dataservice.test")
	assert.Equal(t, 1, res.code)
	assert.Contains(t, res.stderr, "gameloop: FAILED: ")
}

func TestRunFlags(t *testing.T) {
	t.Parallel()
	res := runGame(t.Context(), "-h")
	assert.Equal(t, 0, res.code)
	for _, f := range []string{"-target", "-players", "-duration", "-tps", "-budget", "-autosave",
		"-workers", "-batch", "-seed", "-tls-ca", "-tls-cert", "-tls-key", "-tls-server-name", "-metrics-addr"} {
		assert.Contains(t, res.stderr, "  "+f+" ", "usage explains %s", f)
	}

	bad := []struct {
		args []string
		want string
	}{
		{[]string{"-players", "0"}, "-players 0"},
		{[]string{"-tps", "0"}, "-tps 0"},
		{[]string{"-budget", "0s"}, "-budget 0s"},
		{[]string{"-autosave", "0s"}, "-autosave 0s"},
		{[]string{"-duration", "-1s"}, "-duration -1s"},
		{[]string{"-workers", "0"}, "-workers 0"},
		{[]string{"-batch", "2000"}, "-batch 2000"},
		{[]string{"-target", "x:1", "-tls-cert", "c.pem"}, "-tls-cert and -tls-key"},
		{[]string{"-target", "x:1", "-tls-cert", "c.pem", "-tls-key", "k.pem"}, "need -tls-ca"},
		{[]string{"-tls-ca", "ca.pem"}, "-tls-ca needs -target"},
		{[]string{"-metrics-addr", "9464"}, `-metrics-addr "9464": must be host:port`},
		{[]string{"extra"}, `unexpected argument "extra"`},
		{[]string{"-nope"}, "flag provided but not defined"},
	}
	for _, tt := range bad {
		res := runGame(t.Context(), tt.args...)
		assert.Equal(t, 2, res.code, "%v", tt.args)
		assert.Contains(t, res.stderr, tt.want, "%v", tt.args)
	}
}
