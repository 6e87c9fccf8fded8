package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// A save chained from the callback of a save still in flight when the host stops is served:
// Close would reject it with ErrClosed (TestCloseRejectsCallsFromCallbacks), Shutdown keeps
// admitting calls until the reactor is idle.
func TestShutdownServesCallsChainedFromCallbacks(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{})

	var order []string
	var chainedErr error
	var offHost int
	onHost := func() {
		if !h.onHost() {
			offHost++
		}
	}
	reactor.Call(r, echo, held("autosave"), nil).Then(func(resp *testpb.EchoResponse) {
		onHost()
		order = append(order, resp.GetMessage())
		// The final save, chained so that two saves of one player never race.
		reactor.Call(r, echo, held("final"), nil).
			Then(func(resp *testpb.EchoResponse) { onHost(); order = append(order, resp.GetMessage()) }).
			OnError(func(err error) { chainedErr = err })
	})
	g.waitEntered(t, 1)

	done := make(chan error, 1)
	go func() { // the gate answers while the host goroutine is inside Shutdown
		g.release("autosave")
		_, err := g.awaitEntered(1)
		g.release("final") // even on failure, so that Shutdown returns
		done <- err
	}()
	require.NoError(t, h.Shutdown(closeCtx(t, bound)))
	require.NoError(t, <-done, "the final save reached the server while Shutdown drained")
	require.NoError(t, chainedErr)
	require.Equal(t, []string{"autosave", "final"}, order)
	require.Zero(t, offHost, "callbacks ran on the goroutine inside Shutdown")

	s := r.Stats()
	require.EqualValues(t, 2, s.Succeeded)
	require.EqualValues(t, 2, s.Drained)
	require.Zero(t, s.CutOff)
	require.Zero(t, s.Closed)
	require.ErrorIs(t, reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Err(), calls.ErrClosed, "closed once drained")
}

// Close, unlike Shutdown, rejects what callbacks submit while it runs: that is the loss
// Shutdown exists to prevent, and Close's documentation says so.
func TestCloseRejectsCallsFromCallbacks(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{})
	var chainedErr error
	reactor.Call(r, echo, held("autosave"), nil).Then(func(*testpb.EchoResponse) {
		reactor.Call(r, echo, &testpb.EchoRequest{}, nil).OnError(func(err error) { chainedErr = err })
	})
	g.waitEntered(t, 1)
	go g.release("autosave")
	require.NoError(t, h.Close(closeCtx(t, bound)))
	require.ErrorIs(t, chainedErr, calls.ErrClosed)
}

// A host whose callbacks chain calls forever cannot hold Shutdown past its context: the call
// running then is cut off, and Shutdown says so.
func TestShutdownCutsOffAtItsDeadline(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{})
	const answered = 3 // the chain's first calls are answered; the next one is held
	var sent, failed int
	var lastErr error
	var next func()
	next = func() {
		msg := "chained"
		if sent == answered {
			msg = "held"
		}
		sent++
		req := &testpb.EchoRequest{Message: msg, Block: msg == "held"}
		reactor.Call(r, echo, req, nil).
			Then(func(*testpb.EchoResponse) { next() }).
			OnError(func(err error) { failed++; lastErr = err })
	}
	next()

	ctx, cancel := context.WithCancel(context.Background())
	entered := make(chan error, 1)
	go func() {
		_, err := g.awaitEntered(1) // the held call is in flight: end the drain
		cancel()                    // even on failure, so that Shutdown returns
		entered <- err
	}()
	err := h.Shutdown(ctx)
	require.NoError(t, <-entered, "the held call reached the server")
	require.ErrorIs(t, err, context.Canceled)
	require.EqualError(t, err, "prpc: Close cut off 1 call still running: context canceled")
	require.Equal(t, answered+1, sent)
	require.Equal(t, 1, failed)
	require.ErrorIs(t, lastErr, calls.ErrClosed)
	require.ErrorIs(t, lastErr, context.Canceled)

	s := r.Stats()
	require.EqualValues(t, answered, s.Drained)
	require.EqualValues(t, 1, s.CutOff)
	require.EqualValues(t, 1, s.Closed)
	require.EqualValues(t, answered, s.Succeeded)
	require.Zero(t, s.Pending)
}

func TestShutdownWhenIdleClosesAtOnce(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	require.NoError(t, h.Shutdown(context.Background()))
	require.ErrorIs(t, reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Err(), calls.ErrClosed)
	require.NoError(t, h.Shutdown(context.Background()), "a second Shutdown only closes")
	require.NoError(t, h.Close(context.Background()))
	require.Zero(t, r.Stats().Drained)
}

// After Close, Shutdown has nothing to drain: it returns Close's result and runs the callbacks
// queued since, as Close does.
func TestShutdownAfterClose(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	require.NoError(t, h.Close(closeCtx(t, bound)))
	var ran bool
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).OnError(func(error) { ran = true })
	require.NoError(t, h.Shutdown(closeCtx(t, bound)))
	require.True(t, ran, "Shutdown ran the rejection's callback")
}

func TestShutdownFromCallbackPanics(t *testing.T) {
	srv := testserver.Start(t)
	panics := make(chan any, 1)
	r := newReactor(t, srv, reactor.Config{OnCallbackPanic: func(p any) { panics <- p }})
	h := newHost(t, r)
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Then(func(*testpb.EchoResponse) {
		_ = r.Shutdown(context.Background())
	})
	h.waitFor(func() bool { return len(panics) == 1 })
	require.Equal(t, "prpc: Shutdown called from inside a promise callback; the reactor is still open: call Shutdown on the host goroutine after Tick returns", <-panics)
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	h.waitFor(func() bool { return p.State() != calls.Pending })
	require.NoError(t, p.Err(), "the reactor is still open")
}

// Idle is true only when nothing is pending and no callback waits for a Tick.
func TestIdle(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{MaxOutstanding: 1})
	require.True(t, r.Idle(), "a new reactor")

	p := reactor.Call(r, echo, held("a"), nil)
	require.False(t, r.Idle(), "a call pending")
	g.waitEntered(t, 1)

	rejected := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	require.ErrorIs(t, rejected.Err(), calls.ErrOverloaded)
	g.release("a")
	h.waitFor(func() bool { return p.State() == calls.Succeeded })
	require.True(t, r.Idle(), "the call and the rejection delivered")

	p.Always(func() {}) // a callback registered on a delivered promise waits for the next Tick
	require.False(t, r.Idle(), "a callback waits for Tick")
	h.Tick(time.Second)
	require.True(t, r.Idle())

	reactor.Call(r, echo, nil, nil) // rejected at once: its callbacks wait for Tick
	require.False(t, r.Idle(), "a rejection waits for Tick")
	h.Tick(time.Second)
	require.True(t, r.Idle())

	var idleInCallback bool
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Then(func(*testpb.EchoResponse) { idleInCallback = r.Idle() })
	h.waitFor(func() bool { return r.Idle() })
	require.True(t, idleInCallback, "Idle may be called from a callback")
}
