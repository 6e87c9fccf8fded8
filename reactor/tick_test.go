package reactor_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// Tick behaviour.

func TestTickDeliversInCompletionOrder(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 3})
	var order []string
	settleInOrder(t, r, g, func(m string) { order = append(order, m) }, []string{"a", "b", "c"}, []string{"c", "a", "b"})

	rep := h.Tick(time.Second)
	require.Equal(t, []string{"c", "a", "b"}, order, "delivered in completion order, not submission order")
	require.Equal(t, reactor.TickReport{Delivered: 3, Remaining: 0, Elapsed: rep.Elapsed}, rep)
}

func TestTickDeliversOnlyWhatWasReadyWhenItStarted(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{})

	var bRan bool
	var bSettled bool // B's completion was queued for Tick while A's callback still ran
	settleInOrder(t, r, g, func(string) {
		// A's callback submits B and waits, inside this Tick, until B is waiting for Tick.
		reactor.Call(r, echo, held("b"), nil).Then(func(*testpb.EchoResponse) { bRan = true })
		select {
		case <-g.entered:
		case <-time.After(bound):
			return // bSettled stays false
		}
		inFlight := eventually(func() bool { return r.Stats().InFlight == 1 })
		g.release("b")
		bSettled = inFlight && eventually(func() bool { return r.Stats().InFlight == 0 })
	}, []string{"a"}, []string{"a"})

	rep := h.Tick(time.Hour)
	require.True(t, bSettled, "B did not settle while A's callback ran")
	require.False(t, bRan, "a call submitted by a callback was delivered in the same Tick")
	require.Equal(t, 1, rep.Delivered)
	require.Equal(t, 0, rep.Remaining, "calls settled after Tick started are not its leftovers")

	rep = h.Tick(time.Hour)
	require.True(t, bRan, "B is delivered by the next Tick")
	require.Equal(t, 1, rep.Delivered)
}

func TestTickNonPositiveBudgetDeliversExactlyOne(t *testing.T) {
	for _, budget := range []time.Duration{0, -time.Second} {
		t.Run(budget.String(), func(t *testing.T) {
			r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 3})
			var order []string
			msgs := []string{"a", "b", "c"}
			settleInOrder(t, r, g, func(m string) { order = append(order, m) }, msgs, msgs)

			for i := range msgs {
				drainReady(r)
				rep := h.Tick(budget)
				require.Equal(t, 1, rep.Delivered, "Tick %d", i)
				require.Equal(t, len(msgs)-i-1, rep.Remaining, "Tick %d", i)
				require.Equal(t, msgs[:i+1], order, "leftovers keep their order")
				require.Equal(t, rep.Remaining > 0, readySignalled(r), "Ready is signalled again for leftovers only")
			}
			require.Equal(t, reactor.TickReport{}, h.Tick(budget), "idle")
		})
	}
}

func TestTickBudgetWithManualClock(t *testing.T) {
	clock := reactortest.NewManualClock(time.Now())
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 4, Clock: clock})

	// The budget is 10 ms of the manual clock: the first callback spends 4 ms, still within
	// it; the second 7 more, 11 ms in all, beyond it.
	spend := map[string]time.Duration{"1": 4 * time.Millisecond, "2": 7 * time.Millisecond}
	var order []string
	msgs := []string{"1", "2", "3", "4"}
	settleInOrder(t, r, g, func(m string) {
		order = append(order, m)
		clock.Advance(spend[m])
	}, msgs, msgs)

	drainReady(r)
	rep := h.Tick(10 * time.Millisecond)
	require.Equal(t, []string{"1", "2"}, order, "Tick stops after the callback that spent the budget")
	require.Equal(t, reactor.TickReport{Delivered: 2, Remaining: 2, Elapsed: 11 * time.Millisecond}, rep)
	require.True(t, readySignalled(r), "Ready is signalled again for the leftovers")

	rep = h.Tick(10 * time.Millisecond)
	require.Equal(t, msgs, order, "leftovers are delivered in order by the next Tick")
	require.Equal(t, reactor.TickReport{Delivered: 2, Remaining: 0, Elapsed: 0}, rep)
	require.False(t, readySignalled(r))
}

func TestTickPanicsWhenReentered(t *testing.T) {
	requireRefusedInCallback(t, func(r *reactor.Reactor) { r.Tick(time.Second) })
}

func TestTickPanicsWhenConcurrent(t *testing.T) {
	r, g, _ := startGated(t, reactor.Config{})

	inside, hold, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	settleInOrder(t, r, g, func(string) {
		close(inside)
		<-hold
	}, []string{"a"}, []string{"a"})
	go func() {
		defer close(done)
		r.Tick(time.Second)
	}()
	recv(t, inside, "the other goroutine's Tick running the callback")
	requirePrpcPanic(t, func() { r.Tick(time.Second) })
	requirePrpcPanic(t, func() { _ = r.Close(context.Background()) })
	close(hold)
	<-done
	require.Equal(t, reactor.TickReport{}, r.Tick(time.Second), "usable again once the other Tick returned")
}

func TestTickIdleAllocatesNothing(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	require.Zero(t, testing.AllocsPerRun(1000, func() { r.Tick(time.Millisecond) }), "fresh reactor")

	var n int
	for range 10 {
		reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { n++ })
	}
	h.waitFor(func() bool { return n == 10 })
	require.Zero(t, testing.AllocsPerRun(1000, func() { r.Tick(time.Millisecond) }), "after deliveries")
}

// Wake-ups.

// TestTickStopsAtItsBudget checks that a Tick overruns its budget by one callback at most, and
// that once it has seen its budget spent it delivers nothing more, not even the rejections
// waiting after the settled calls. The simulation found both broken when Tick read the clock
// only every few deliveries while callbacks were cheap: a cheap callback let the next, dear
// ones run unchecked, and a Tick that ran out of budget in such a batch went on to deliver
// waiting rejections.
func TestTickStopsAtItsBudget(t *testing.T) {
	const (
		budget   = 64 * time.Millisecond
		cost     = 900 * time.Microsecond // cheap: under a 64th of the budget
		settled  = 100
		rejected = 10
	)
	clock := reactortest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: clock})
	ran, rejections := 0, 0
	for range settled {
		require.NoError(t, reactor.Go(r, echo, &testpb.EchoRequest{}, nil, func(*testpb.EchoResponse, error) {
			ran++
			clock.Advance(cost)
		}))
	}
	require.Eventually(t, func() bool {
		s := r.Stats()
		return s.Pending == settled && s.InFlight == 0 && s.Queued == 0
	}, 10*time.Second, time.Millisecond, "every call settled, waiting for Tick")
	for range rejected {
		require.Error(t, reactor.Go(r, echo, nil, nil, func(*testpb.EchoResponse, error) { rejections++ }))
	}

	start := clock.Now()
	rep := r.Tick(budget)
	elapsed := clock.Now().Sub(start)
	require.Zero(t, rejections, "a rejection was delivered after the budget was spent")
	require.Less(t, ran, settled, "the budget ran out before every call was delivered")
	require.Equal(t, ran, rep.Delivered)
	require.LessOrEqual(t, elapsed, budget+cost, "an overrun of one callback at most")
	require.Equal(t, settled-ran+rejected, rep.Remaining)
}

// TestTickAfterClose checks what Tick does once Close has returned: nothing, at once, while
// nothing is queued for it; and, at the next Tick, signalled by Ready but not by OnReady, the
// callbacks of a call made after Close and those added to a promise that Close delivered.
func TestTickAfterClose(t *testing.T) {
	var onReady atomic.Int32
	clock := reactortest.NewManualClock(time.Now()) // so that TickReport.Elapsed is exactly 0
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{Clock: clock, OnReady: func() { onReady.Add(1) }})

	var got []string // written by callbacks, on this goroutine
	early := reactor.Call(r, echo, &testpb.EchoRequest{Message: "early"}, nil).
		Then(func(resp *testpb.EchoResponse) { got = append(got, resp.GetMessage()) })
	require.NoError(t, r.Close(closeCtx(t, bound)))
	require.Equal(t, []string{"early"}, got, "Close delivered the call")
	require.Equal(t, calls.Succeeded, early.State())
	drainReady(r)
	onReadyAtClose := onReady.Load()

	require.Equal(t, reactor.TickReport{}, r.Tick(time.Second), "nothing left to deliver")
	require.False(t, readySignalled(r))

	early.Then(func(resp *testpb.EchoResponse) { got = append(got, "again "+resp.GetMessage()) })
	late := reactor.Call(r, echo, &testpb.EchoRequest{Message: "late"}, nil).
		OnError(func(err error) { got = append(got, "late: "+err.Error()) })
	require.ErrorIs(t, late.Err(), calls.ErrClosed)
	require.Equal(t, []string{"early"}, got, "no callback runs before the next Tick")
	require.True(t, readySignalled(r), "Ready signals what waits for Tick after Close")

	require.Equal(t, reactor.TickReport{Delivered: 2}, r.Tick(time.Second))
	require.Equal(t, []string{"early", "again early", "late: " + late.Err().Error()}, got)
	require.Equal(t, reactor.TickReport{}, r.Tick(time.Second))
	require.Equal(t, onReadyAtClose, onReady.Load(), "OnReady is not called after Close")
}

// nextTickRounds is how many Call-then-Tick pairs each case runs: enough for a queue that
// depends on another goroutine's timing to miss under -race on a loaded machine.
const nextTickRounds = 2000

// keepBusy keeps up to depth good calls in flight on r from another goroutine until the test
// ends, so that the lanes keep appending to the delivery queue while the test ticks. The
// callbacks that return the slots run in the test's Ticks.
func keepBusy(t *testing.T, r *reactor.Reactor, depth int) {
	slots := make(chan struct{}, depth)
	for range depth {
		slots <- struct{}{}
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			case <-slots:
			}
			reactor.Call(r, echo, &testpb.EchoRequest{Message: "load"}, nil).
				Always(func() { slots <- struct{}{} })
		}
	})
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// TestRejectedCallRunsAtTheNextTick checks that a call rejected at submission has its
// callbacks run by the first Tick after Call returns, for every kind of rejection, while lanes
// deliver other calls at the same time.
func TestRejectedCallRunsAtTheNextTick(t *testing.T) {
	tests := []struct {
		name   string
		cfg    reactor.Config
		busy   bool                                                          // keep lanes delivering meanwhile
		prep   func(t *testing.T, r *reactor.Reactor)                        // once, before the rounds
		submit func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] // one rejected call
		want   error
	}{
		{"nil request", reactor.Config{}, true, nil,
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, echo, nil, nil)
			}, calls.ErrInvalidArgument},
		{"negative timeout", reactor.Config{}, true, nil,
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: -time.Second})
			}, calls.ErrInvalidArgument},
		{"timeout above MaxTimeout", reactor.Config{MaxTimeout: time.Minute}, true, nil,
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: time.Hour})
			}, calls.ErrInvalidArgument},
		{"bad metadata", reactor.Config{}, true, nil,
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Metadata: metadata.MD{"grpc-reserved": {"v"}}})
			}, calls.ErrInvalidArgument},
		{"metadata too large", reactor.Config{Limits: limits.Limits{MaxMetadataBytes: 64}}, true, nil,
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Metadata: metadata.Pairs("k", strings.Repeat("v", 100))})
			}, calls.ErrTooLarge},
		{"method outside Config.Methods", reactor.Config{Methods: []calls.Descriptor{echo}}, true, nil,
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, otherMethod, &testpb.EchoRequest{}, nil)
			}, calls.ErrInvalidArgument},
		{"overload", reactor.Config{MaxOutstanding: 1, MaxTimeout: time.Hour}, false,
			func(t *testing.T, r *reactor.Reactor) {
				// One call that does not complete before the test ends holds the only slot.
				held := reactor.Call(r, echo, &testpb.EchoRequest{Message: "hold"}, &calls.Options{Timeout: time.Hour})
				require.NoError(t, held.Err())
			},
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
			}, calls.ErrOverloaded},
		{"closed", reactor.Config{}, false,
			func(t *testing.T, r *reactor.Reactor) { require.NoError(t, r.Close(context.Background())) },
			func(r *reactor.Reactor) *calls.Promise[*testpb.EchoResponse] {
				return reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
			}, calls.ErrClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := echoBackend()
			release := make(chan struct{})
			reactortest.Handle(b, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				if req.GetMessage() == "hold" {
					select {
					case <-release:
					case <-ctx.Done():
					}
				}
				return &testpb.EchoResponse{Message: req.GetMessage()}, nil
			})
			r := reactortest.NewReactor(t, b, tt.cfg)
			t.Cleanup(func() { close(release) }) // before NewReactor's Close: cleanups run last first
			if tt.busy {
				keepBusy(t, r, 32)
			}
			if tt.prep != nil {
				tt.prep(t, r)
			}
			misses := 0
			for range nextTickRounds {
				var got error
				ran := 0
				p := tt.submit(r).OnError(func(err error) { got = err; ran++ }).Always(func() { ran++ })
				require.Zero(t, ran, "a callback ran inside Call or OnError")
				require.ErrorIs(t, p.Err(), tt.want, "the rejection is visible when Call returns")
				r.Tick(time.Hour)
				if ran != 2 {
					misses++ // a later Tick runs them, counting into this round's variables
					continue
				}
				require.ErrorIs(t, got, tt.want)
			}
			require.Zero(t, misses, "Ticks after Call that did not run the rejected call's callbacks")
		})
	}
}

// TestCallbackAddedAfterDeliveryRunsAtTheNextTick checks that Then, OnError and Always on a
// delivered promise run at the very next Tick, while lanes deliver other calls.
func TestCallbackAddedAfterDeliveryRunsAtTheNextTick(t *testing.T) {
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{})
	keepBusy(t, r, 32)
	ok := reactor.Call(r, echo, &testpb.EchoRequest{Message: "done"}, nil)
	failed := reactor.Call(r, echo, nil, nil)
	reactortest.Flush(t, r)
	require.Equal(t, calls.Succeeded, ok.State())
	require.Equal(t, calls.Failed, failed.State())

	misses := 0
	for range nextTickRounds {
		ran := 0
		ok.Then(func(resp *testpb.EchoResponse) { ran++ })
		failed.OnError(func(error) { ran++ })
		failed.Always(func() { ran++ })
		require.Zero(t, ran, "a callback ran inside the method that registered it")
		r.Tick(time.Hour)
		if ran != 3 {
			misses++
		}
	}
	require.Zero(t, misses, "Ticks after Then/OnError/Always that did not run the new callbacks")
}

// TestNextTickRunsHostQueueAfterWaitingOutcomes checks the order within one Tick: outcomes
// that were already waiting when it started come before the callbacks of a call rejected
// after them, and a spent budget leaves the rejected call's callbacks for the Tick after.
func TestNextTickRunsHostQueueAfterWaitingOutcomes(t *testing.T) {
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{})
	var order []string
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "first"}, nil).
		Then(func(resp *testpb.EchoResponse) { order = append(order, resp.GetMessage()) })
	require.Eventually(t, func() bool {
		select {
		case <-r.Ready():
			return true
		default:
			return false
		}
	}, 5*time.Second, time.Millisecond, "the good call never settled")
	reactor.Call(r, echo, nil, nil).OnError(func(error) { order = append(order, "rejected") })

	report := r.Tick(0) // a budget of zero delivers exactly one: the outcome that was waiting
	require.Equal(t, []string{"first"}, order)
	require.Equal(t, 1, report.Remaining)
	report = r.Tick(0)
	require.Equal(t, []string{"first", "rejected"}, order)
	require.Zero(t, report.Remaining)
}

// TestFlushRunsRejectedCallbacks checks that reactortest.Flush runs the callbacks of a call
// rejected at submission before it returns, so that a game test asserts on callbacks that ran.
func TestFlushRunsRejectedCallbacks(t *testing.T) {
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{})
	var got error
	reactor.Call(r, echo, nil, nil).OnError(func(err error) { got = err })
	reactortest.Flush(t, r)
	require.ErrorIs(t, got, calls.ErrInvalidArgument)

	got = nil
	require.NoError(t, reactortest.Drain(r, time.Second)) // nothing waiting: returns at once
	reactor.Call(r, echo, nil, nil).OnError(func(err error) { got = err })
	require.NoError(t, reactortest.Drain(r, 5*time.Second))
	require.ErrorIs(t, got, calls.ErrInvalidArgument)
}
