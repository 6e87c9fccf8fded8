package reactor

import "context"

// Shutdown drains r, then closes it, the way http.Server.Shutdown drains its connections
// before it closes them. Call it on the goroutine that calls Tick, when the host stops and after
// it has submitted its last calls (final saves, say). Called from inside a promise callback,
// it panics, as Close does, and the reactor stays open.
//
// Shutdown first ends every open stream, as CloseStreams does; their ends are delivered while
// it drains. While it drains, r keeps admitting calls: calls submitted from callbacks, and the callbacks
// of those calls, are served like any other. Shutdown runs callbacks on the calling goroutine
// as calls settle, without a budget, until r is idle (see Idle) or ctx is done. Then it closes
// r as Close(ctx) does: if r went idle, nothing is left to cut off; if ctx is done first, the
// calls still pending are cut off at once with ErrClosed wrapping ctx.Err(). A host that keeps
// submitting calls from callbacks forever therefore cannot hold Shutdown past ctx's deadline.
// Since every call has a deadline, Shutdown with a context without a deadline returns once the
// callbacks stop submitting calls.
//
// Config.OnReady is not called once Shutdown has begun. A call of it still running holds
// Shutdown no longer than half a second after Shutdown began, and never past ctx: once every
// call is delivered and r is closed, Shutdown returns, with an error matching ErrHookBlocked
// if that call has not returned by then. An invoker lane stuck in a hook of the host (an
// interceptor, say, that ignores its context) cannot hold Shutdown past ctx, plus half a
// second for such lanes. See Close.
//
// Stats().Drained counts the calls whose callbacks the drain ran, and Stats().CutOff the calls
// Close cut off. Shutdown returns what Close returns: nil, or an error that says how many
// calls were cut off, that wraps ctx.Err() if ctx was done, and that matches ErrHookBlocked if
// a hook of the host held a goroutine of the reactor. After Close, Shutdown only closes (it
// has nothing to drain). A nil ctx panics with a "prpc:" message, as it does for Close.
//
// A host that must keep its own tick loop running while calls drain (to keep moving the world,
// or to drain several reactors whose callbacks call each other) does not call Shutdown: it
// keeps calling Tick on its schedule until Idle reports true for every reactor, or its own
// timeout passes, and then calls Close. Package loop drains its reactors that way.
func (r *Reactor) Shutdown(ctx context.Context) error {
	if ctx == nil {
		panic(nilContext("Shutdown"))
	}
	r.enterHost("Shutdown")
	defer r.ticking.Store(false)
	r.silenceHost()
	r.streams.stopAll(false)
	ctxDone := ctx.Done()
	for !r.closing.Load() {
		r.drained.Add(uint64(r.tick(0, true).Delivered))
		if r.Idle() {
			break
		}
		select {
		case <-r.ready:
			continue
		case <-ctxDone:
		}
		break
	}
	r.closeOnce.Do(func() { r.closeErr = r.shutdown(ctx) })
	r.drainAll()
	return r.closeErr
}

// Idle reports whether r has nothing left to do for its host: no admitted call is waiting for
// a response, a lane or a Tick, no callback is waiting for a Tick (of a rejected call, or
// registered on a delivered promise), and no stream that was stopped (Cancel, CloseStreams) or
// has ended is waiting for its end's delivery. Open streams do not count: they never end by
// themselves. A call submitted by another goroutine may make r busy
// again at any moment; on the goroutine that calls Tick, in a host that submits calls only
// there, Idle stays true until the host submits again. Call it on the goroutine that calls
// Tick (it may be called from inside a callback). It costs three atomic loads.
//
// Idle is what a host that keeps ticking while it shuts down waits for before it calls Close:
//
//	deadline := time.Now().Add(5 * time.Second)
//	world.SaveAll() // the last calls
//	for !r.Idle() && time.Now().Before(deadline) {
//		waitForNextTick()
//		r.Tick(2 * time.Millisecond) // callbacks may submit more calls: they are served
//	}
//	r.Close(ctx) // cuts off what is still running, if the deadline passed
func (r *Reactor) Idle() bool {
	return r.admitted.Load() == 0 && r.hostq.Idle() && r.streams.winding.Load() == 0
}
