package reactor_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestCallbacksRunOnlyInsideTick(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	log := &callbackLog{h: h}

	// Rejected at once: the failure is visible, the callbacks wait for Tick.
	rejected := reactor.Call(r, echo, nil, nil)
	require.ErrorIs(t, rejected.Err(), calls.ErrInvalidArgument)
	log.attach(rejected, "")
	require.Empty(t, log.ran, "callbacks ran inside Then, OnError or Always")
	// The rejection has reached the delivery queue; still nothing runs without Tick.
	select {
	case <-r.Ready():
	case <-time.After(bound):
		t.Fatal("no wake-up for the rejected call")
	}
	require.Empty(t, log.ran)
	h.Tick(time.Second)
	require.Equal(t, []string{"error1", "always1", "error2", "always2"}, log.ran)

	// A call that succeeds; callbacks attached to it from its own callback run at the next
	// Tick, not in the current one.
	log.ran = nil
	p := reactor.Call(r, echo, &testpb.EchoRequest{Message: "x"}, nil)
	log.attach(p, "")
	p.Always(func() { log.attach(p, "inner-") })
	h.waitFor(func() bool { return len(log.ran) > 0 })
	require.Equal(t, []string{"then1", "always1", "then2", "always2"}, log.ran)
	h.waitFor(func() bool { return len(log.ran) > 4 })
	require.Equal(t, []string{"then1", "always1", "then2", "always2", "inner-then1", "inner-always1", "inner-then2", "inner-always2"}, log.ran)

	// Attached after delivery, from outside any Tick: not run inside Then/Always, signalled
	// on Ready, run at the next Tick, once.
	log.ran = nil
	log.attach(p, "late-")
	require.Empty(t, log.ran, "callbacks ran inside Then, OnError or Always")
	select {
	case <-r.Ready():
	case <-time.After(bound):
		t.Fatal("no wake-up for callbacks attached after delivery")
	}
	require.Equal(t, 1, h.Tick(time.Second).Delivered)
	require.Equal(t, []string{"late-then1", "late-always1", "late-then2", "late-always2"}, log.ran)
	require.Equal(t, reactor.TickReport{}, h.Tick(time.Second), "each callback runs once")
	require.Empty(t, log.offHost, "callbacks ran off the Tick goroutine")
}

func TestCallbacksRunInRegistrationOrderExactlyOnce(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	tests := []struct {
		name string
		req  *testpb.EchoRequest
		want []string
	}{
		{"success", &testpb.EchoRequest{Message: "x"}, []string{"then1", "always1", "then2", "always2"}},
		{"server error", &testpb.EchoRequest{FailCode: int32(codes.NotFound)}, []string{"error1", "always1", "error2", "always2"}},
		{"rejected", nil, []string{"error1", "always1", "error2", "always2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := &callbackLog{h: h}
			var done bool
			p := reactor.Call(r, echo, tc.req, nil)
			log.attach(p, "")
			p.Always(func() { done = true })
			h.waitFor(func() bool { return done })
			require.Equal(t, tc.want, log.ran)
			// Later Ticks, and completions of other calls, run nothing again.
			var other bool
			reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { other = true })
			h.waitFor(func() bool { return other })
			h.Tick(time.Second)
			require.Equal(t, tc.want, log.ran)
			require.Empty(t, log.offHost)
		})
	}
}

// probe is what the callbacks of TestPromiseDropsCallbacksOnceRun capture. It holds a pointer
// field, so it is not a tiny (pointer-free) allocation sharing its memory block with others,
// which would keep a weak pointer to it alive.
type probe struct {
	hits int
	_    *probe
}

// attachProbes registers three callbacks on p, each capturing its own probe, and returns weak
// pointers to the probes. It is not inlined, so no strong reference stays on the test's stack.
//
//go:noinline
func attachProbes(p *echoPromise) []weak.Pointer[probe] {
	a, b, c := &probe{}, &probe{}, &probe{}
	p.Then(func(*testpb.EchoResponse) { a.hits++ }).
		OnError(func(error) { b.hits++ }). // never runs on success, and must be dropped too
		Always(func() { c.hits++ })
	return []weak.Pointer[probe]{weak.Make(a), weak.Make(b), weak.Make(c)}
}

func TestPromiseDropsCallbacksOnceRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *testpb.EchoRequest
	}{{"delivered", &testpb.EchoRequest{}}, {"rejected", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newReactor(t, srv, reactor.Config{})
			h := newHost(t, r)

			p := reactor.Call(r, echo, tc.req, nil)
			probes := attachProbes(p)
			var done bool
			p.Always(func() { done = true })
			runtime.GC()
			for i, w := range probes {
				require.NotNil(t, w.Value(), "probe %d collected while its callback was pending", i)
			}

			h.waitFor(func() bool { return done })
			// One full GC clears weak pointers to unreachable objects; a few more absorb
			// anything the runtime keeps for a cycle.
			collected := func() bool {
				for _, w := range probes {
					if w.Value() != nil {
						return false
					}
				}
				return true
			}
			for i := 0; i < 10 && !collected(); i++ {
				runtime.GC()
			}
			require.True(t, collected(), "the promise still references callbacks that ran")
			runtime.KeepAlive(p) // the promise itself stays reachable throughout
		})
	}
}

func TestCancelInFlightCall(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, longTimeouts(reactor.Config{}))
	h := newHost(t, r)

	var got error
	p := reactor.Call(r, echo, &testpb.EchoRequest{Block: true}, nil).OnError(func(err error) { got = err })
	require.Eventually(t, func() bool { return srv.Calls() == 1 }, bound, poll)
	p.Cancel()
	p.Cancel() // idempotent
	h.waitFor(func() bool { return got != nil })
	require.ErrorIs(t, got, calls.ErrCancelled)
	require.Equal(t, codes.Canceled, status.Code(got))
	require.Same(t, got, p.Err())
	requireServerCancelled(t, srv)
	require.Eventually(t, func() bool { return r.Stats().InFlight == 0 }, bound, poll)
	require.EqualValues(t, 1, r.Stats().Cancelled)
}

func TestCancelQueuedCall(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, longTimeouts(reactor.Config{Workers: 1, BatchSize: 1}))
	g := newGate(t, srv)
	h := newHost(t, r)

	results := map[string]error{}
	call := func(req *testpb.EchoRequest) *echoPromise {
		m := req.GetMessage()
		return reactor.Call(r, echo, req, nil).
			Then(func(*testpb.EchoResponse) { results[m] = nil }).
			OnError(func(err error) { results[m] = err })
	}
	call(held("a"))
	b := call(held("b"))
	g.waitEntered(t, 1)
	waitGauges(t, r, 1, 1)

	b.Cancel()
	h.waitFor(func() bool { _, ok := results["b"]; return ok })
	require.ErrorIs(t, results["b"], calls.ErrCancelled, "settled while still queued")
	require.NotContains(t, results, "a", "a is still held")

	g.release("a")
	call(&testpb.EchoRequest{Message: "c"}) // FIFO: dispatched after b would have been
	h.waitFor(func() bool { return len(results) == 3 })
	require.NoError(t, results["a"])
	require.NoError(t, results["c"])
	require.Equal(t, []string{"a", "c"}, g.seenMessages(), "the cancelled queued call was never sent")
}

func TestCancelParentContext(t *testing.T) {
	for _, tc := range []struct {
		name  string
		state string // of the call when its context is cancelled
	}{{"in flight", "in flight"}, {"queued", "queued"}, {"already cancelled", "before Call"}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			// One lane, so that a call can be held in flight and another queued behind it.
			r := newReactor(t, srv, longTimeouts(reactor.Config{Workers: 1, BatchSize: 1}))
			g := newGate(t, srv)
			h := newHost(t, r)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			switch tc.state {
			case "before Call":
				cancel()
			case "queued":
				reactor.Call(r, echo, held("blocker"), nil) // released only when the test ends
				g.waitEntered(t, 1)
			}
			var got error
			p := reactor.Call(r, echo, held("call"), &calls.Options{Context: ctx}).
				OnError(func(err error) { got = err })
			switch tc.state {
			case "in flight":
				g.waitEntered(t, 1)
				waitGauges(t, r, 1, 0)
				cancel()
			case "queued":
				waitGauges(t, r, 1, 1)
				cancel() // settles at once, without waiting for the lane
			}
			h.waitFor(func() bool { return got != nil })
			require.ErrorIs(t, got, calls.ErrCancelled)
			require.ErrorIs(t, got, context.Canceled)
			require.Equal(t, codes.Canceled, status.Code(got))
			require.Same(t, got, p.Err())
			require.EqualValues(t, 1, r.Stats().Cancelled)
		})
	}
}

func TestCancelAfterSettlementIsNoOp(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, longTimeouts(reactor.Config{}))
	g := newGate(t, srv)
	h := newHost(t, r)
	log := &callbackLog{h: h}

	// Settled, not yet delivered.
	undelivered := reactor.Call(r, echo, held("a"), nil)
	log.attach(undelivered, "a-")
	g.waitEntered(t, 1)
	waitGauges(t, r, 1, 0)
	g.release("a")
	waitGauges(t, r, 0, 0)
	undelivered.Cancel()

	// Delivered.
	var done bool
	delivered := reactor.Call(r, echo, &testpb.EchoRequest{Message: "b"}, nil)
	log.attach(delivered, "b-")
	delivered.Always(func() { done = true })
	h.waitFor(func() bool { return done })
	delivered.Cancel()

	// A round trip after both cancels: the reactor handles events in order, so it has seen
	// them by the time this call is delivered.
	var flushed bool
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { flushed = true })
	h.waitFor(func() bool { return flushed })
	h.Tick(time.Second)

	for _, p := range []*echoPromise{undelivered, delivered} {
		require.Equal(t, calls.Succeeded, p.State())
		require.NoError(t, p.Err())
	}
	require.Equal(t, []string{"a-then1", "a-always1", "a-then2", "a-always2", "b-then1", "b-always1", "b-then2", "b-always2"}, log.ran)
	require.Zero(t, r.Stats().Cancelled)
	require.EqualValues(t, 3, r.Stats().Succeeded)
}

// TestExactlyOnceUnderRaces races responses against local deadlines and cancels: handler
// delays are spread around the timeout, and a quarter of the calls are also cancelled at a
// random moment. Whatever wins, each call settles once.
func TestExactlyOnceUnderRaces(t *testing.T) {
	srv := testserver.Start(t)
	const n, timeout = 256, 100 * time.Millisecond
	r := newReactor(t, srv, reactor.Config{Workers: 4, BatchSize: 64}) // every call in flight at once
	h := newHost(t, r)
	var warm bool // connect first, so that dialling does not decide the first outcomes
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { warm = true })
	h.waitFor(func() bool { return warm })

	var cancels sync.WaitGroup
	cs := make([]*call, n)
	for i := range n {
		req := &testpb.EchoRequest{DelayMs: int64(rand.IntN(201))} // 0–200 ms
		c := h.submit(echo, req, &calls.Options{Timeout: timeout})
		cs[i] = c
		if i%4 == 0 {
			cancels.Add(1)
			time.AfterFunc(time.Duration(rand.IntN(150))*time.Millisecond, func() {
				defer cancels.Done()
				c.p.Cancel()
			})
		}
	}
	h.settle(cs...)
	cancels.Wait()
	// Late cancels, late responses and late timer events must not deliver anything again.
	var flushed bool
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { flushed = true })
	h.waitFor(func() bool { return flushed })
	h.Tick(time.Second)

	outcomes := map[string]int{}
	for _, c := range cs {
		require.True(t, c.settledOnce(), "%v", c)
		if c.thens == 1 {
			require.Equal(t, calls.Succeeded, c.p.State(), "call %d", c.seq)
			outcomes["ok"]++
			continue
		}
		require.Equal(t, calls.Failed, c.p.State(), "call %d", c.seq)
		switch err := c.p.Err(); {
		case errors.Is(err, calls.ErrTimeout):
			outcomes["timeout"]++
		case errors.Is(err, calls.ErrCancelled):
			outcomes["cancelled"]++
		default:
			t.Fatalf("call %d: unexpected error %v", c.seq, err)
		}
	}
	s := r.Stats()
	require.Zero(t, s.Pending)
	require.EqualValues(t, n+2, s.Submitted)
	require.EqualValues(t, outcomes["ok"]+2, s.Succeeded)
	require.EqualValues(t, outcomes["timeout"], s.TimedOut)
	require.EqualValues(t, outcomes["cancelled"], s.Cancelled)
	t.Logf("outcomes: %v", outcomes)
}
