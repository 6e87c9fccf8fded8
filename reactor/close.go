package reactor

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/internal/callqueue"
)

// closeState is the reactor's closing: what Close and Shutdown on the host goroutine, and the
// reactor goroutine as it finishes, write as the reactor closes, most of it once. Call and Go
// read closing on every call, so it sits with the read-mostly fields.
type closeState struct {
	closing   atomic.Bool // Close has begun: no call is admitted any more
	closeOnce sync.Once
	closeErr  error
	// Each lane sends on laneExit as it exits, which has room for all of them. Close closes
	// abandon once it stops waiting for lanes that a hook of the host holds (see laneGrace).
	laneExit chan struct{}
	abandon  chan struct{}
	done     chan struct{} // closed when the reactor goroutine has exited
	// Written by the reactor goroutine before done is closed: stuckLanes is how many lanes
	// it left behind (see laneGrace); recordsMade is how many call records it made, for
	// tests.
	stuckLanes  int
	recordsMade int
	// stuckStreams is how many streams' receiving goroutines Close left inside a hook of the
	// host, whose ends it delivered itself; written by Close.
	stuckStreams int
	// Shutdown's counters, for Stats: calls whose callbacks the drain ran (written by Shutdown,
	// on the host goroutine), and calls Close cut off (written by the reactor goroutine).
	drained atomic.Uint64
	cutOff  atomic.Uint64
}

// Close shuts the reactor down: it stops admitting calls at once, and waits for the calls
// already admitted only until ctx is done (see below). Call it on the goroutine that calls
// Tick, never from inside a callback. Called from inside a promise callback, Close panics with
// a message saying that the reactor is still open; the panic, isolated like any callback's,
// reaches only Config.OnCallbackPanic (by default, the log), and the reactor keeps serving:
// call Close on the host goroutine after Tick returns.
//
// Close stops admitting calls (later calls fail with ErrClosed), lets admitted calls finish
// until ctx is done, then cuts off the rest: they fail with ErrClosed wrapping ctx.Err() and
// their transport calls are cancelled. Meanwhile it runs callbacks on the calling goroutine as
// calls settle, and before it returns every pending callback has run, every goroutine the
// reactor started has exited (but one that a hook of the host holds: see below) and a
// connection it dialled is closed. Since every call has a deadline, Close with a context
// without deadline returns within MaxTimeout, plus the lanes' grace if a hook holds a lane
// (see below).
// Calls and streams the program made itself through Conn are not waited for: closing a
// connection New dialled ends those still running with codes.Canceled.
//
// Calls that callbacks submit while Close runs fail with ErrClosed: a final save chained from
// the callback of a save still in flight is lost. To serve such calls, shut down with Shutdown,
// or keep ticking until Idle before calling Close (package loop does).
//
// Once Close (or Shutdown) has begun, Config.OnReady is not called again: the calling
// goroutine is the one that delivers. Close never waits long on a hook of the host: if a
// call of OnReady is still running once everything else is done (blocked, say, on a host
// queue that only the goroutine now inside Close drains), Close waits for it only until half
// a second has passed since Close (or Shutdown) began, or until ctx is done if that comes
// first, and then returns an error matching ErrHookBlocked; the goroutine that called OnReady
// exits as soon as OnReady returns. So a stuck OnReady delays a Close whose calls are all
// delivered by half a second at most, never until ctx's deadline.
//
// Nor does Close wait long for a hook of the host that runs on an invoker lane and ignores the
// call's context (an interceptor, stats handler or per-RPC credentials in Config.DialOptions,
// or Config.Conn's Invoke). Once every call has settled and ctx is done, a lane still running
// holds a call that Close (or its deadline) cut off, whose transport call returns as soon as
// its context is cancelled: Close waits for such lanes half a second more (for a ctx without
// deadline, until MaxTimeout and half a second have passed since it began). It then leaves
// behind the lanes still inside a hook, delivers the calls they hold (with the outcome they
// were cut off with: ErrClosed, or ErrTimeout or ErrCancelled if their deadline or a cancel cut
// them first) and returns an error matching ErrHookBlocked that says how many lanes it left.
// Each exits once its hook returns, and delivers nothing. Such a call is the one exception to
// the rule that Call owns the request until the call settles: the hook may still read the
// request after the callback has run, so the host must not modify it. Without a hook that
// blocks, Close waits for the lanes at no extra cost.
//
// Close returns nil, or an error that says how many calls it cut off (Stats().CutOff counts
// them), whether OnReady was still running and how many lanes a hook held, and that wraps
// ctx.Err() if ctx was done by then. Later calls return the same result (after running any
// callbacks queued since).
//
// A nil ctx panics with a "prpc:" message, before Close does anything: the reactor stays
// open. For no deadline of its own, pass context.Background().
func (r *Reactor) Close(ctx context.Context) error {
	if ctx == nil {
		panic(nilContext("Close"))
	}
	r.enterHost("Close")
	defer r.ticking.Store(false)
	r.silenceHost()
	r.closeOnce.Do(func() { r.closeErr = r.shutdown(ctx) })
	r.drainAll()
	return r.closeErr
}

func (r *Reactor) shutdown(ctx context.Context) error {
	// The streams are stopped before the reactor goroutine may close the connection, so that
	// their ends name Close, not the connection closing under them.
	streamsExited := r.streams.stopAll(true)
	r.beginClose()
	reactorDone := r.done
	ctxDone := ctx.Done()
	var ctxErr error
	// giveUp fires when Close stops waiting for lanes and stream goroutines a hook of the
	// host holds: laneGrace after ctx is done, or, for a context without deadline, after
	// MaxTimeout (by then every call has timed out) and laneGrace.
	var giveUp <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(r.cfg.MaxTimeout + laneGrace)
		defer t.Stop()
		giveUp = t.C
	}
	for reactorDone != nil || streamsExited != nil {
		select {
		case <-reactorDone:
			reactorDone = nil
		case <-streamsExited:
			streamsExited = nil
		case <-ctxDone:
			ctxErr = ctx.Err()
			ctxDone = nil
			r.in.PushAbort(ctxErr)
			t := time.NewTimer(laneGrace)
			defer t.Stop()
			giveUp = t.C
		case <-giveUp:
			giveUp = nil
			close(r.abandon)
			if streamsExited != nil {
				r.stuckStreams = r.streams.abandon()
				streamsExited = nil
			}
		case <-r.ready:
			r.tick(0, true)
		}
	}
	r.drainAll()
	blocked := r.notify != nil && !r.notify.join(ctx)
	if (blocked || r.stuckLanes > 0 || r.stuckStreams > 0) && ctxErr == nil {
		ctxErr = ctx.Err()
	}
	return r.closeResult(ctxErr, blocked, r.stuckLanes)
}

// laneGrace is how long Close waits for the invoker lanes once every call has settled and its
// context is done (or MaxTimeout has passed): a lane still running holds a call the reactor
// cut, whose transport call returns as soon as its context is cancelled, unless a hook of the
// host on the lane ignores the context. After it, Close delivers the calls such lanes hold
// and leaves them behind.
const laneGrace = 500 * time.Millisecond

// beginClose stops admitting calls and asks the reactor goroutine to exit once every call
// has settled.
func (r *Reactor) beginClose() {
	r.closing.Store(true)
	r.in.Push(callqueue.Event{Kind: callqueue.EvClose})
}

// nilContext returns the message of the panic of a Shutdown or Close (what) given a nil
// context.
func nilContext(what string) string {
	return "prpc: Reactor." + what + " with a nil context.Context, and refused: the reactor is still open; " +
		"pass context.Background() for no deadline"
}

// silenceHost stops the calls of OnReady for good: once Shutdown or Close has begun, the host
// goroutine is inside it, ticking, and has no need of a wake-up.
func (r *Reactor) silenceHost() {
	if r.notify != nil {
		r.notify.silence()
	}
}

// closeResult is Close's result once the reactor goroutine is done: nil, or, if it cut calls
// off, OnReady was still running (onReadyBlocked) or lanes or streams' goroutines were left
// inside a hook of the host (stuckLanes, and r.stuckStreams), an error that wraps ctxErr, the
// error of the context Close gave up on.
func (r *Reactor) closeResult(ctxErr error, onReadyBlocked bool, stuckLanes int) error {
	stuckStreams := r.stuckStreams
	if n := r.cutOff.Load(); n > 0 || onReadyBlocked || stuckLanes > 0 || stuckStreams > 0 {
		return &closeError{cutOff: n, onReadyBlocked: onReadyBlocked, stuckLanes: stuckLanes, stuckStreams: stuckStreams, ctxErr: ctxErr}
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

// closeError is Close's error when it cut calls off, or OnReady was still running or invoker
// lanes had not returned from gRPC when it returned: it wraps the context's error, and matches
// ErrHookBlocked in the last two cases.
type closeError struct {
	cutOff         uint64
	onReadyBlocked bool
	stuckLanes     int
	stuckStreams   int
	ctxErr         error
}

func (e *closeError) Error() string {
	var parts []string
	if e.cutOff > 0 {
		calls := "calls"
		if e.cutOff == 1 {
			calls = "call"
		}
		parts = append(parts, fmt.Sprintf("Close cut off %d %s still running", e.cutOff, calls))
	}
	if e.onReadyBlocked {
		parts = append(parts, "Config.OnReady had not returned when Close did (a hook must not block); "+
			"the goroutine that called it exits once it returns")
	}
	if e.stuckLanes > 0 {
		lanes, rest := "lanes", "their calls were delivered, and each lane exits once its hook returns"
		if e.stuckLanes == 1 {
			lanes, rest = "lane", "its call was delivered, and the lane exits once the hook returns"
		}
		parts = append(parts, fmt.Sprintf("%d invoker %s had not returned from gRPC when Close did "+
			"(an interceptor, stats handler or per-RPC credentials in Config.DialOptions, or Config.Conn, "+
			"ignores the call's context); %s", e.stuckLanes, lanes, rest))
	}
	if e.stuckStreams > 0 {
		parts = append(parts, fmt.Sprintf("%d streams' goroutines had not returned from gRPC when Close did "+
			"(a stream interceptor or stats handler in Config.DialOptions, or Config.Conn, ignores the stream's context); "+
			"their ends were delivered, and each goroutine exits once its hook returns", e.stuckStreams))
	}
	msg := "prpc: " + strings.Join(parts, "; ")
	if e.ctxErr != nil {
		msg += ": " + e.ctxErr.Error()
	}
	return msg
}

func (e *closeError) Unwrap() error { return e.ctxErr }

// Is matches ErrHookBlocked if a hook of the host was still running.
func (e *closeError) Is(target error) bool {
	return target == ErrHookBlocked && (e.onReadyBlocked || e.stuckLanes > 0 || e.stuckStreams > 0)
}
