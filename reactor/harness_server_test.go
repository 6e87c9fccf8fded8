package reactor_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// echoFunc is the signature of an Echo handler.
type echoFunc func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)

// hold returns an Echo handler that holds every call until release is closed, then echoes
// its Message, or fails when the call's context ends first. If seen is not nil, it counts the
// calls by Message.
func hold(release <-chan struct{}, seen *arrivals) echoFunc {
	return func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if seen != nil {
			seen.add(req.GetMessage())
		}
		select {
		case <-release:
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// arrivals counts a server's calls by Message, to prove that no call reached it twice.
type arrivals struct {
	mu sync.Mutex
	n  map[string]int
}

func newArrivals() *arrivals { return &arrivals{n: map[string]int{}} }

func (s *arrivals) add(msg string) {
	s.mu.Lock()
	s.n[msg]++
	s.mu.Unlock()
}

// check returns the number of distinct messages seen and the messages seen more than once.
func (s *arrivals) check() (distinct int, dups []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m, n := range s.n {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", m, n))
		}
	}
	return len(s.n), dups
}

// snapshot returns the messages seen so far.
func (s *arrivals) snapshot() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.n))
	for m := range s.n {
		out[m] = true
	}
	return out
}

// has reports whether msg has been seen.
func (s *arrivals) has(msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[msg] > 0
}

// startGated starts a test server whose handler is a gate, and a reactor for it with
// longTimeouts(cfg), so that no held call times out; it returns the reactor, the gate and a
// host for the reactor. The gate is installed after the reactor, so that it releases its calls
// before the reactor's Close when the test ends.
func startGated(t *testing.T, cfg reactor.Config) (*reactor.Reactor, *gate, *host) {
	t.Helper()
	srv := testserver.Start(t)
	r := newReactor(t, srv, longTimeouts(cfg))
	return r, newGate(t, srv), newHost(t, r)
}

// gate is a test server handler that holds every request with Block set until the test releases
// it by its Message (or releases all), or until the call's context ends; it fails a request
// with FailCode set with that code, and answers other requests at once. Either way the response
// echoes the Message.
type gate struct {
	entered   chan string // the Message of each held request, when its handler starts
	all       chan struct{}
	allOnce   sync.Once
	cancelled atomic.Int64 // held handlers that saw their context end

	mu      sync.Mutex
	open    map[string]chan struct{}
	seen    []string                  // every request's Message, in arrival order
	onEnter func(ctx context.Context) // if set, called with each held call's context
}

// setOnEnter has f called with the context of each held call, as its handler starts.
func (g *gate) setOnEnter(f func(ctx context.Context)) {
	g.mu.Lock()
	g.onEnter = f
	g.mu.Unlock()
}

// newGate installs a gate on srv and releases everything when the test ends. Call it after
// newReactor, so that the release runs before the reactor's Close.
func newGate(t *testing.T, srv *testserver.Server) *gate {
	g := &gate{entered: make(chan string, 1024), all: make(chan struct{}), open: map[string]chan struct{}{}}
	srv.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		msg := req.GetMessage()
		g.mu.Lock()
		g.seen = append(g.seen, msg)
		onEnter := g.onEnter
		g.mu.Unlock()
		if code := req.GetFailCode(); code != 0 {
			return nil, status.Error(codes.Code(code), req.GetFailMessage())
		}
		if !req.GetBlock() {
			return &testpb.EchoResponse{Message: msg}, nil
		}
		if onEnter != nil {
			onEnter(ctx)
		}
		g.entered <- msg // never blocks: tests hold far fewer than 1024 calls
		select {
		case <-g.gate(msg):
		case <-g.all:
		case <-ctx.Done():
			g.cancelled.Add(1)
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return &testpb.EchoResponse{Message: msg}, nil
	})
	t.Cleanup(g.releaseAll)
	return g
}

func (g *gate) gate(msg string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.open[msg]
	if !ok {
		ch = make(chan struct{})
		g.open[msg] = ch
	}
	return ch
}

// release lets the held request with this Message answer.
func (g *gate) release(msg string) { close(g.gate(msg)) }

// releaseAll lets every held request, present and future, answer.
func (g *gate) releaseAll() { g.allOnce.Do(func() { close(g.all) }) }

// waitEntered waits until n more held requests have reached the handler and returns their
// Messages in arrival order. It fails the test otherwise, so call it on the test goroutine
// only; another goroutine calls awaitEntered and reports its error.
func (g *gate) waitEntered(t *testing.T, n int) []string {
	t.Helper()
	got, err := g.awaitEntered(n)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// awaitEntered is waitEntered for any goroutine: it returns an error if fewer than n more held
// requests reach the handler within bound.
func (g *gate) awaitEntered(n int) ([]string, error) {
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	var got []string
	for len(got) < n {
		select {
		case m := <-g.entered:
			got = append(got, m)
		case <-deadline.C:
			return got, fmt.Errorf("%d of %d held requests reached the server within %v: %q", len(got), n, bound, got)
		}
	}
	return got, nil
}

func (g *gate) seenMessages() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]string(nil), g.seen...)
}

// held returns a request the gate holds until released by msg.
func held(msg string) *testpb.EchoRequest { return &testpb.EchoRequest{Message: msg, Block: true} }

// settleInOrder holds len(msgs) calls, all in flight at once, then releases them in the order
// given, waiting after each release until the reactor has queued it for Tick. recv is called
// on the Tick goroutine with each delivered Message. Workers×BatchSize must be at least
// len(msgs).
func settleInOrder(t *testing.T, r *reactor.Reactor, g *gate, recv func(string), submit, release []string) {
	t.Helper()
	for _, m := range submit {
		reactor.Call(r, echo, held(m), nil).
			Then(func(resp *testpb.EchoResponse) { recv(resp.GetMessage()) }).
			OnError(func(err error) { recv("error: " + err.Error()) })
	}
	g.waitEntered(t, len(submit))
	waitGauges(t, r, len(submit), 0)
	for i, m := range release {
		g.release(m)
		waitGauges(t, r, len(submit)-i-1, 0)
	}
}

// otherService serves TestService's Echo under another service name (prpctest.Other), so a
// test has a second method path, echoOther, on the same server.
type otherService struct {
	testpb.UnimplementedTestServiceServer
	fn echoFunc
}

func (o *otherService) Echo(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return o.fn(ctx, req)
}

// startBoth starts a test server that runs fn for both echo and echoOther.
func startBoth(t *testing.T, fn echoFunc) *testserver.Server {
	t.Helper()
	srv := testserver.Start(t, withOther(fn))
	srv.SetHandler(fn)
	return srv
}

// withOther makes a testserver serve fn as echoOther ("/prpctest.Other/Echo").
func withOther(fn echoFunc) grpc.ServerOption {
	return testserver.WithServices(func(r grpc.ServiceRegistrar) {
		desc := testpb.TestService_ServiceDesc
		desc.ServiceName = "prpctest.Other"
		r.RegisterService(&desc, &otherService{fn: fn})
	})
}

// serverCalls returns each server's Echo count.
func serverCalls(srvs []*testserver.Server) []int64 {
	out := make([]int64, len(srvs))
	for i, s := range srvs {
		out[i] = s.Calls()
	}
	return out
}

// since returns now − before, element-wise.
func since(now, before []int64) []int64 {
	out := make([]int64, len(now))
	for i := range now {
		out[i] = now[i] - before[i]
	}
	return out
}

// requireFairShare checks that each of counts is within ±20% of total/len(counts).
func requireFairShare(t *testing.T, counts []int64, total int) {
	t.Helper()
	fair := float64(total) / float64(len(counts))
	var sum int64
	for i, c := range counts {
		require.InDelta(t, fair, float64(c), 0.2*fair, "backend %d got %d of %d calls (fair share %.0f ± 20%%): %v", i, c, total, fair, counts)
		sum += c
	}
	require.EqualValues(t, total, sum, "calls counted by the servers: %v", counts)
}

// warmUp runs bursts of calls until every one of srvs has served one: round_robin connects
// its subchannels in the background, and a backend that has served a call is READY in its
// picker.
func (h *host) warmUp(srvs []*testserver.Server) {
	h.t.Helper()
	until(h.t, bound, "every backend gets calls", func() bool {
		requireEchoed(h.t, h.burst("warm", 30, 30))
		for _, n := range serverCalls(srvs) {
			if n == 0 {
				return false
			}
		}
		return true
	})
}
