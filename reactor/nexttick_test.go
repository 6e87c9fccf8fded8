package reactor_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

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
