package reactor

import (
	"context"
	"fmt"
)

// Close shuts the reactor down at once. Call it on the goroutine that calls Tick, never from
// inside a callback. Called from inside a promise callback, Close panics with a message saying
// that the reactor is still open; the panic, isolated like any callback's, reaches only
// Config.OnCallbackPanic (by default, the log), and the reactor keeps serving: call Close on
// the host goroutine after Tick returns.
//
// Close stops admitting calls (later calls fail with ErrClosed), lets admitted calls finish
// until ctx is done, then cuts off the rest: they fail with ErrClosed wrapping ctx.Err() and
// their transport calls are cancelled. Meanwhile it runs callbacks on the calling goroutine as
// calls settle, and before it returns every pending callback has run, every goroutine the
// reactor started has exited and a connection it dialled is closed. Since every call has a
// deadline, Close with a context without deadline returns within MaxTimeout. Calls and
// streams the program made itself through Conn are not waited for: closing a connection New
// dialled ends those still running with codes.Canceled.
//
// Calls that callbacks submit while Close runs fail with ErrClosed: a final save chained from
// the callback of a save still in flight is lost. To serve such calls, shut down with Shutdown,
// or keep ticking until Idle before calling Close (package loop does).
//
// Close returns nil, or an error that wraps ctx.Err() and says how many calls it cut off
// (Stats().CutOff counts them). Later calls return the same result (after running any
// callbacks queued since).
func (r *Reactor) Close(ctx context.Context) error {
	r.enterHost("Close")
	defer r.ticking.Store(false)
	r.closeOnce.Do(func() { r.closeErr = r.shutdown(ctx) })
	r.drainAll()
	return r.closeErr
}

func (r *Reactor) shutdown(ctx context.Context) error {
	r.beginClose()
	ctxDone := ctx.Done()
	var ctxErr error
	for {
		select {
		case <-r.done:
			r.drainAll()
			return r.closeResult(ctxErr)
		case <-ctxDone:
			ctxErr = ctx.Err()
			ctxDone = nil
			r.in.pushAbort(ctxErr)
		case <-r.ready:
			r.tick(0, true)
		}
	}
}

// beginClose stops admitting calls and asks the reactor goroutine to exit once every call
// has settled.
func (r *Reactor) beginClose() {
	r.closing.Store(true)
	r.in.push(event{kind: evClose})
}

// closeResult is Close's result once the reactor goroutine is done: nil, or, if it cut calls
// off, an error that wraps ctxErr, the error of the context Close gave up on.
func (r *Reactor) closeResult(ctxErr error) error {
	if n := r.cutOff.Load(); n > 0 {
		return &cutOffError{n: n, ctxErr: ctxErr}
	}
	return nil
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

// cutOffError is Close's error when it cut calls off: it wraps the context's error.
type cutOffError struct {
	n      uint64
	ctxErr error
}

func (e *cutOffError) Error() string {
	calls := "calls"
	if e.n == 1 {
		calls = "call"
	}
	return fmt.Sprintf("prpc: Close cut off %d %s still running: %v", e.n, calls, e.ctxErr)
}

func (e *cutOffError) Unwrap() error { return e.ctxErr }
