package reactor

import "context"

// Close shuts the reactor down. Call it on the goroutine that calls Tick, never from inside a
// callback: there it panics, and the panic, isolated like any callback's, reaches only
// Config.OnCallbackPanic, so the reactor is not closed.
//
// Close stops admitting calls (later calls fail with ErrClosed), lets admitted calls finish
// until ctx is done, then cuts off the rest: they fail with ErrClosed wrapping ctx.Err() and
// their transport calls are cancelled. Meanwhile it runs callbacks on the calling goroutine as
// calls settle, and before it returns every pending callback has run, every goroutine the
// reactor started has exited and a connection it dialled is closed. Since every call has a
// deadline, Close with a context without deadline returns within MaxTimeout.
//
// Close returns nil, or ctx.Err() if it had to cut calls off. Later calls return the same
// result (after running any callbacks queued since).
func (r *Reactor) Close(ctx context.Context) error {
	r.enterHost("Close")
	defer r.ticking.Store(false)
	r.closeOnce.Do(func() { r.closeErr = r.shutdown(ctx) })
	r.drainAll()
	return r.closeErr
}

func (r *Reactor) shutdown(ctx context.Context) error {
	r.mu.Lock()
	r.closing = true
	r.mu.Unlock()
	r.closingA.Store(true)
	r.in.push(event{kind: evClose})
	ctxDone := ctx.Done()
	var ctxErr error
	for {
		select {
		case <-r.done:
			r.drainAll()
			if r.cut > 0 {
				return ctxErr
			}
			return nil
		case <-ctxDone:
			ctxErr = ctx.Err()
			ctxDone = nil
			r.in.pushAbort(ctxErr)
		case <-r.ready:
			r.tick(0, true)
		}
	}
}

// drainAll delivers everything queued, including what the callbacks it runs queue in turn,
// up to a bound so that a callback that resubmits forever cannot hang Close.
func (r *Reactor) drainAll() {
	for range 64 {
		if r.tick(0, true).Delivered == 0 {
			return
		}
	}
}
