package reactor_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// blockingOnReady returns an OnReady hook that blocks from its first call until unblock is
// called or the test ends, and a channel that receives a value when a call of it starts. Call
// it before the reactor is made, so that its own cleanup runs after the reactor's Close has
// been tried (cleanups run last first).
func blockingOnReady(t *testing.T) (hook func(), entered <-chan struct{}, unblock func()) {
	ch := make(chan struct{})
	var once sync.Once
	unblock = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(unblock)
	in := make(chan struct{}, 1)
	return func() {
		select {
		case in <- struct{}{}:
		default:
		}
		<-ch
	}, in, unblock
}

// TestBlockedOnReadyNeverHoldsCalls checks that a hook that blocks delays wake-ups, never
// calls: with OnReady stuck in its first call, every lane keeps sending and completing calls,
// and a host that ticks on Ready gets them all.
func TestBlockedOnReadyNeverHoldsCalls(t *testing.T) {
	hook, entered, unblock := blockingOnReady(t)
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Workers: 1, BatchSize: 2, OnReady: hook})
	t.Cleanup(unblock) // before the reactor's Close, which then joins the notifier at once
	h := newHost(t, r)
	h.submit(echo, echoReq("first"), nil)
	recv(t, entered, "the first OnReady call")
	// Four times as many calls as lanes, in one go: each lane completes several, and so meets
	// OnReady again and again if it is the one that calls it.
	cs := h.burst("after", 8*2, 8*2)
	requireEchoed(t, cs)
}

// TestCloseReturnsWhileOnReadyBlocks checks that Shutdown and Close do not wait for a stuck
// OnReady longer than its grace: with every call delivered and the reactor closed, they
// return, long before their context's deadline (or MaxTimeout, without one), with an error
// that matches ErrHookBlocked but not the context's error, since the context was not done.
// With a grace longer than the context, they return at the context's deadline, with an error
// that matches both: ctx bounds them whatever the hook does. Once the hook returns, the
// goroutine that called it exits (leakCheck).
func TestCloseReturnsWhileOnReadyBlocks(t *testing.T) {
	cases := []struct {
		name    string
		stop    string        // "Shutdown" or "Close"
		timeout time.Duration // the context's; 0 for context.Background()
		grace   time.Duration // how long they wait for OnReady; 0 for the default
	}{
		// A context far longer than the test's bound for the call: the call returns once
		// everything is delivered and the grace has passed, or fails the test.
		{"Shutdown", "Shutdown", time.Hour, 0},
		{"Close", "Close", time.Hour, 0},
		{"Close without deadline", "Close", 0, 0},
		// A grace far longer than the test's bound, and a context far shorter: the call
		// returns at the context's deadline, which is far above the time seven echo calls on
		// loopback take, even under -race on a busy machine.
		{"Shutdown with a grace past the context", "Shutdown", time.Second, time.Hour},
		{"Close with a grace past the context", "Close", time.Second, time.Hour},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			leakCheck(t)
			hook, entered, unblock := blockingOnReady(t)
			srv := testserver.Start(t)
			r := newReactor(t, srv, longTimeouts(reactor.Config{Workers: 1, BatchSize: 2, OnReady: hook}))
			if tc.grace > 0 {
				reactor.SetOnReadyGrace(r, tc.grace)
			}
			h := newHost(t, r)
			cs := []*call{h.submit(echo, echoReq("first"), nil)}
			recv(t, entered, "the first OnReady call")
			for i := range 6 {
				cs = append(cs, h.submit(echo, echoReq(string(rune('a'+i))), nil))
			}
			ctx := context.Background()
			if tc.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.timeout)
				defer cancel()
			}
			_, err := h.stopWithin(tc.stop, ctx, bound, unblock) // with OnReady blocked
			require.ErrorIs(t, err, reactor.ErrHookBlocked)
			require.ErrorContains(t, err, "Config.OnReady had not returned")
			require.NotContains(t, err.Error(), "cut off", "every call was delivered")
			if tc.grace > 0 {
				require.ErrorIs(t, err, context.DeadlineExceeded)
			} else {
				require.NotErrorIs(t, err, context.DeadlineExceeded, "returned at its context's deadline")
				require.NoError(t, ctx.Err(), "returned at its context's deadline")
			}
			requireEchoed(t, cs)
			for _, c := range cs {
				require.True(t, c.settledOnce(), "not settled exactly once: %v", c)
			}
			// The hook returns; the goroutine that called it exits (leakCheck, once the
			// test's cleanups have run), and Close's result stands.
			unblock()
			require.Equal(t, err, h.Close(context.Background()))
		})
	}
}

// TestExecutorHostShutsDown is the host of a world with a bounded executor (Dragonfly before
// v0.11: Exec blocks while the world's queue is full): OnReady hands a Tick to the queue with
// a send that blocks when it is full, and the host goroutine, once it shuts down, no longer
// drains the queue. Once Shutdown has begun, OnReady is not called, so the queue never fills
// and Shutdown drains every call, however many complete meanwhile.
func TestExecutorHostShutsDown(t *testing.T) {
	exec := make(chan func(), 8)
	var shuttingDown atomic.Bool
	var lateWakeUps atomic.Int64
	var r *reactor.Reactor
	srv := testserver.Start(t)
	r = newReactor(t, srv, longTimeouts(reactor.Config{Workers: 2, BatchSize: 4, OnReady: func() {
		if shuttingDown.Load() {
			lateWakeUps.Add(1)
		}
		exec <- func() { r.Tick(tickBudget) } // blocks while the queue is full
	}}))
	g := newGate(t, srv)
	h := newHost(t, r)
	// The world runs its queue until it has seen the first reply.
	first := h.submit(echo, echoReq("first"), nil)
	for !first.done() {
		select {
		case f := <-exec:
			f()
		case <-time.After(bound):
			t.Fatal("no reply was handed to the world's queue")
		}
	}
	// A call whose reply waits for Tick when Shutdown begins: Shutdown runs its callback
	// first, and the callback releases the calls the backend holds.
	select {
	case <-r.Ready(): // the first reply's wake-up, which the world's Tick did not take
	default:
	}
	trigger := h.submit(echo, echoReq("trigger"), nil)
	recv(t, r.Ready(), "the trigger's reply")
	// Calls the backend holds until Shutdown has begun, so that their replies arrive while it
	// drains, in many batches: each would need a wake-up.
	var cs []*call
	for i := range 32 {
		cs = append(cs, h.submit(echo, held("held"+strconv.Itoa(i)), nil))
	}
	g.waitEntered(t, 8) // every lane holds a call
	trigger.p.Always(func() {
		shuttingDown.Store(true)
		g.releaseAll()
	})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	_, err := h.stopWithin("Shutdown", ctx, bound+bound/2, nil) // past its context's deadline
	require.NoError(t, err)
	require.True(t, shuttingDown.Load())
	requireEchoed(t, cs)
	require.Zero(t, lateWakeUps.Load(), "OnReady was called after Shutdown began")
}
