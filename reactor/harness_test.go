package reactor_test

// The harness of the reactor tests is the harness_*_test.go files:
//   - this one: the methods the tests call, the bounds of their waits, and the helpers that
//     make a reactor and wait for it;
//   - harness_host_test.go: the host that drives a reactor, and harness_audit_test.go the
//     audit of its Ticks;
//   - harness_calls_test.go: the host's records of the calls it submits, and the checks on
//     them;
//   - harness_server_test.go and harness_h2server_test.go: the test servers' handlers, and a
//     misbehaving HTTP/2 server;
//   - harness_conn_test.go: in-memory connections;
//   - harness_tls_test.go: the TLS fixtures;
//   - harness_race_test.go and harness_norace_test.go: whether the race detector is on, and
//     harness_switches_linux_test.go and harness_switches_other_test.go: the thread switches
//     the audit reads.

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/connectivity"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

const (
	// bound is how long a test waits for something that normally takes micro- to
	// milliseconds: a reactor turn, a loopback round trip, a reconnect with fastBackoff, a
	// goroutine being scheduled. It is hundreds of times that, so that it holds under -race
	// on a loaded machine; it is reached only when the behaviour under test is broken, and
	// decides only how long a broken build takes to fail.
	bound = 10 * time.Second

	// poll is the interval of the waits for conditions that no channel signals.
	poll = time.Millisecond
)

// fastBackoff reconnects quickly: the next attempt starts at most MaxDelay × (1 + Jitter) =
// 60 ms after a failed one, so a restarted or repaired server is used again soon.
var fastBackoff = reactor.Backoff{BaseDelay: 10 * time.Millisecond, MaxDelay: 50 * time.Millisecond}

var (
	// echo is the Echo method internal/testserver serves.
	echo = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

	// echoOther is Echo under another service name, which withOther serves: a second method
	// path on the same server.
	echoOther = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Other/Echo")

	// otherMethod is a method outside the allowlists under test. Its service is not
	// registered, so MustMethod accepts it unchecked.
	otherMethod = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Unlisted/Other")
)

// echoMethod is the type of the Echo methods above; echoPromise is the promise of their calls.
type (
	echoMethod  = *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse]
	echoPromise = calls.Promise[*testpb.EchoResponse]
)

// newReactor starts a reactor with cfg and closes it when the test ends, ignoring Close's
// result: a test that expects one closes the reactor itself. If cfg has no Target, Targets
// or Conn, the reactor calls srv (which may be nil otherwise); Credentials default to
// Insecure unless cfg.Conn is set.
func newReactor(t testing.TB, srv *testserver.Server, cfg reactor.Config) *reactor.Reactor {
	t.Helper()
	if cfg.Target == "" && len(cfg.Targets) == 0 && cfg.Conn == nil {
		cfg.Target = srv.Addr()
	}
	if cfg.Credentials == nil && cfg.Conn == nil {
		cfg.Credentials = reactor.Insecure()
	}
	r, err := reactor.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r
}

// longTimeouts sets timeouts long enough that no call times out during a test unless the test
// says so.
func longTimeouts(cfg reactor.Config) reactor.Config {
	cfg.DefaultTimeout = time.Minute
	cfg.MaxTimeout = 10 * time.Minute
	return cfg
}

// tickUntil calls tick each time r's Ready fires, and also every poll if polling is set, until
// cond holds; it fails the test, naming what, if cond does not hold within d. Every wait of
// the harness that ticks is this loop.
func tickUntil(t testing.TB, r *reactor.Reactor, d time.Duration, polling bool, what string, tick func(), cond func() bool) {
	t.Helper()
	deadline := time.NewTimer(d)
	defer deadline.Stop()
	var every <-chan time.Time // nil: never fires
	if polling {
		ticker := time.NewTicker(poll)
		defer ticker.Stop()
		every = ticker.C
	}
	for !cond() {
		select {
		case <-r.Ready():
		case <-every:
		case <-deadline.C:
			t.Fatalf("%s: not within %v", what, d)
		}
		tick()
	}
}

// waitFor ticks r, woken by Ready, until cond holds, and fails the test if it does not within
// bound. It is for conditions that callbacks make true: it ticks only when Ready says there
// is something to deliver.
func waitFor(t testing.TB, r *reactor.Reactor, cond func() bool) {
	t.Helper()
	tickUntil(t, r, bound, false, "condition", func() { r.Tick(time.Second) }, cond)
}

// roundTrip makes one Echo call on r and ticks r until its outcome is delivered.
func roundTrip(t testing.TB, r *reactor.Reactor, req *testpb.EchoRequest, opts *calls.Options) (*echoPromise, *testpb.EchoResponse, error) {
	t.Helper()
	var resp *testpb.EchoResponse
	var err error
	settled := false
	p := reactor.Call(r, echo, req, opts).
		Then(func(v *testpb.EchoResponse) { resp = v }).
		OnError(func(e error) { err = e }).
		Always(func() { settled = true })
	waitFor(t, r, func() bool { return settled })
	return p, resp, err
}

// until repeats step, which does real work (a burst of calls, say) and reports whether the
// condition holds, until it returns true; it fails the test, naming what, after d.
func until(t testing.TB, d time.Duration, what string, step func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !step() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
	}
}

// eventually polls cond until it holds or bound passes, and reports whether it held. Unlike
// require.Eventually it does not stop the test, so callbacks may use it; they record the result
// for the test to assert after Tick.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(bound)
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// waitGauges waits until Stats shows inFlight transport calls and queued calls. With held
// calls these gauges are exact hand-offs: the reactor publishes them at the end of the turn
// that settled, dispatched or queued a call, after queuing any settled call for Tick. So once
// InFlight has dropped from n to n-1 after a release, that call is waiting for Tick.
func waitGauges(t testing.TB, r *reactor.Reactor, inFlight, queued int) {
	t.Helper()
	require.Eventually(t, func() bool {
		s := r.Stats()
		return s.InFlight == inFlight && s.Queued == queued
	}, bound, poll, "want InFlight %d, Queued %d", inFlight, queued)
}

// waitPending waits until Stats counts pending calls: the reactor goroutine counts a call
// when it takes it, shortly after Call returns.
func waitPending(t testing.TB, r *reactor.Reactor, pending int) {
	t.Helper()
	require.Eventually(t, func() bool { return r.Stats().Pending == pending }, bound, poll, "want Pending %d", pending)
}

// drainReady empties r's Ready channel.
func drainReady(r *reactor.Reactor) {
	select {
	case <-r.Ready():
	default:
	}
}

// readySignalled reports whether a value is waiting on r's Ready channel, consuming it.
func readySignalled(r *reactor.Reactor) bool {
	select {
	case <-r.Ready():
		return true
	default:
		return false
	}
}

// requirePrpcPanic runs f and requires it to panic with a string starting "prpc:".
func requirePrpcPanic(t testing.TB, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		requirePrpcPanicValue(t, recover())
	}()
	f()
}

// requirePrpcPanicValue requires p, a recovered panic value, to be a string starting "prpc:".
func requirePrpcPanicValue(t testing.TB, p any) {
	t.Helper()
	require.NotNil(t, p, "did not panic")
	s, ok := p.(string)
	require.True(t, ok, "panic value is %T (%v), want a string", p, p)
	require.True(t, strings.HasPrefix(s, "prpc:"), "panic %q does not start with \"prpc:\"", s)
}

// requireRefusedInCallback calls reenter, which calls back into the reactor, from a callback
// that Tick runs, and requires that it panics with a "prpc:" message, that OnCallbackPanic
// gets the panic and the next callback still runs, and that the reactor stays open and keeps
// serving.
func requireRefusedInCallback(t *testing.T, reenter func(r *reactor.Reactor)) {
	t.Helper()
	srv := testserver.Start(t)
	var panics []any // written on the Tick goroutine only
	r := newReactor(t, srv, reactor.Config{OnCallbackPanic: func(p any) { panics = append(panics, p) }})
	h := newHost(t, r)

	var after bool
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).
		Always(func() { reenter(r) }).
		Always(func() { after = true })
	h.waitFor(func() bool { return after })
	require.Len(t, panics, 1)
	requirePrpcPanicValue(t, panics[0])

	var ok bool
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Then(func(*testpb.EchoResponse) { ok = true })
	require.NoError(t, p.Err(), "the refused call did not close the reactor")
	h.waitFor(func() bool { return ok })
}

// recv waits for a value from ch and returns it, failing the test, naming what, if none comes
// within bound.
func recv[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(bound):
		t.Fatalf("%s: not within %v", what, bound)
	}
	var zero T
	return zero
}

// closeCtx returns a context that ends after d, or when the test ends.
func closeCtx(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// leakCheck verifies, when the test ends, that no goroutine started during the test is left.
// Call it first, so that its check runs after every cleanup registered later (reactors,
// proxies, servers). TestMain's goleak covers the whole package; this names the test that
// leaked.
func leakCheck(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

// slowTests reports whether the slow, gated tests should run (PRPC_SLOW_TESTS=1).
func slowTests() bool { return os.Getenv("PRPC_SLOW_TESTS") == "1" }

// syncBuffer collects what a slog handler writes, one record per Write, safe for concurrent
// writes, for tests that read a log after the fact.
type syncBuffer struct {
	mu      sync.Mutex
	records []string
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.records = append(b.records, string(p))
	return len(p), nil
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.records, "")
}

// maxTime returns the later of a and b.
func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// backendStates returns Stats().Backends as address → state, for the backends whose state is
// known.
func backendStates(r *reactor.Reactor) map[string]connectivity.State {
	out := map[string]connectivity.State{}
	for _, b := range r.Stats().Backends {
		if b.StateKnown {
			out[b.Addr] = b.State
		}
	}
	return out
}

// backendState returns the connectivity state Stats().Backends reports for addr, failing the
// test if it reports none.
func backendState(t testing.TB, r *reactor.Reactor, addr string) connectivity.State {
	t.Helper()
	state, ok := backendStates(r)[addr]
	require.True(t, ok, "Stats().Backends has no known state for %s: %+v", addr, r.Stats().Backends)
	return state
}
