package reactor

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
)

// ErrHookBlocked is matched (errors.Is) by the error of a Shutdown or Close that returned
// while goroutines of the reactor were still inside a hook of the host: the goroutine that
// calls Config.OnReady, if a call of it had not returned by the time everything else was
// done and half a second had passed since Shutdown or Close began (or by the time the
// context was done, if that came first); or invoker lanes inside a hook that runs on them
// and ignores the call's context (an interceptor, stats handler or per-RPC credentials in
// Config.DialOptions, or Config.Conn's Invoke), which Close waits for half a second more once
// its context is done (see Close). Every call had been delivered and every other goroutine
// of the reactor had exited; each goroutine left behind exits as soon as its hook returns,
// and calls no hook again and delivers nothing. The error's message names the hooks and
// says how many lanes were left.
var ErrHookBlocked = errors.New("prpc: a hook of the host had not returned when the reactor closed")

// wakeup is the settled calls on their way to Tick and the host's wake-up flag. The lanes and
// the reactor goroutine push calls to out as they settle them, and Tick takes them. armed is
// set while a wake-up was sent and Tick has not drained since: any goroutine that calls
// wakeHost sets it, and every Tick clears it.
type wakeup struct {
	out   callqueue.Outbox
	armed atomic.Bool
}

// wakeHost tells the host that settled calls are waiting for Tick, once until the next Tick
// drains them: a value on Ready, and a call of OnReady by the notifier goroutine. It never
// blocks and never calls a hook of the host, so any goroutine may call it: a lane that settled
// a call, the reactor goroutine, deliverNext for a call that Call or Go rejected or for a
// callback added to a delivered promise, and Tick for the calls it left behind. The reactor
// goroutine's last wake-up, as it finishes, is wakeHostLast.
func (r *Reactor) wakeHost() {
	if !r.armed.CompareAndSwap(false, true) {
		return
	}
	select {
	case r.ready <- struct{}{}:
	default:
	}
	if r.notify != nil {
		r.notify.kick()
	}
}

// wakeHostLast is the reactor goroutine's last wake-up, as it finishes (engine.finish): it
// queues for Tick the calls it settled last, those that raced with Close, and puts a value on
// Ready. Unlike wakeHost, it neither reads nor sets the wake-up flag and never calls OnReady:
// Close or Shutdown holds the host role by then and delivers these calls once done is closed
// (drainAll), and OnReady is not called once they began.
func (r *Reactor) wakeHostLast(settled []*callcore.Call) {
	if len(settled) == 0 {
		return
	}
	r.out.Push(settled...)
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// onReadyGrace is how long Shutdown and Close wait, counted from when they began, for a call
// of OnReady that was running then: a hook that does not block returns well within it, and
// one that is still running after it is stuck, so Close returns without it, with
// ErrHookBlocked. A Shutdown that drained for longer does not wait at all.
const onReadyGrace = 500 * time.Millisecond

// notifier is the goroutine that calls Config.OnReady, so that no lane and not the reactor
// goroutine ever waits on the host's hook: a hook that blocks delays later wake-ups, never a
// call. Kicks that arrive while the hook runs coalesce into one more call, which is skipped
// if a Tick has taken their calls by then (see enter).
type notifier struct {
	onReady func()
	// armed is the reactor's wake-up flag: wakeHost sets it before it kicks, and every Tick
	// clears it before it looks for calls to deliver.
	armed *atomic.Bool
	// wakes numbers the wake-ups: kick adds one before it sends. announced is the number
	// the last call of OnReady was made for (the notifier goroutine's own).
	wakes     atomic.Uint64
	announced uint64
	kicks     chan struct{} // capacity 1
	stop      chan struct{} // closed by Close once the reactor goroutine has exited
	done      chan struct{} // closed when the notifier goroutine has exited
	// grace is how long join waits for a call of OnReady still running, counted from
	// quietSince: onReadyGrace, or what a test sets.
	grace time.Duration

	mu         sync.Mutex
	quiet      bool      // Shutdown or Close has begun: OnReady is not called any more
	quietSince time.Time // when quiet was set
	running    bool      // OnReady is running
}

func newNotifier(onReady func(), armed *atomic.Bool) *notifier {
	return &notifier{
		onReady: onReady,
		armed:   armed,
		kicks:   make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		grace:   onReadyGrace,
	}
}

// kick asks for one call of OnReady, for the wake-up that has just set armed. It never
// blocks.
func (n *notifier) kick() {
	n.wakes.Add(1)
	select {
	case n.kicks <- struct{}{}:
	default: // a call is asked for already
	}
}

// run is the notifier goroutine.
func (n *notifier) run() {
	defer close(n.done)
	for {
		select {
		case <-n.kicks:
		case <-n.stop:
			return
		}
		if !n.enter() {
			continue
		}
		n.onReady()
		n.mu.Lock()
		n.running = false
		n.mu.Unlock()
	}
}

// enter marks OnReady running, unless the notifier is quiet or the wake-up it was kicked for
// needs no call: a Tick has taken its calls, or a call of OnReady has announced them.
//
// A Tick that begins after a wake-up clears armed: it takes the calls the wake-up announced,
// and the calls it leaves behind, or that settle after it began, arm and kick again (or the
// lane that held the outbox does, once it has appended). A wake-up is numbered after it
// armed, so after its calls settled; a call of OnReady made once enter has read that number
// (or a later one) comes after them, and announces them too, so a kick of that wake-up taken
// after the call needs no second one. Skipping either kind loses no wake-up: it saves a call
// of OnReady, and the host's Tick, that would find the calls gone, or a second call for one
// batch. A Tick that begins after enter has checked can still take the calls before OnReady
// runs: then, rarely, the host's Tick finds nothing to do.
func (n *notifier) enter() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.quiet || !n.armed.Load() {
		return false
	}
	wake := n.wakes.Load()
	if wake == n.announced {
		return false
	}
	n.announced, n.running = wake, true
	return true
}

// silence stops OnReady from being called again: once it returns, no call starts after it. A
// call already running goes on. The first call records when, for join's grace.
func (n *notifier) silence() {
	n.mu.Lock()
	if !n.quiet {
		n.quiet, n.quietSince = true, time.Now()
	}
	n.mu.Unlock()
}

// join stops the notifier goroutine and waits for it to exit. If OnReady is running, it waits
// only until n.grace has passed since the notifier was silenced (when Shutdown or Close
// began), or ctx is done if that is sooner, and then reports false: the goroutine exits once
// OnReady returns.
func (n *notifier) join(ctx context.Context) bool {
	n.silence()
	close(n.stop)
	n.mu.Lock()
	running, since := n.running, n.quietSince
	n.mu.Unlock()
	if !running {
		<-n.done // it calls no hook any more: it exits at once
		return true
	}
	t := time.NewTimer(time.Until(since.Add(n.grace)))
	defer t.Stop()
	select {
	case <-n.done:
		return true
	case <-ctx.Done():
	case <-t.C:
	}
	select { // it may have returned meanwhile
	case <-n.done:
		return true
	default:
		return false
	}
}
