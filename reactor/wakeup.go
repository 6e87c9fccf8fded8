package reactor

import (
	"context"
	"errors"
	"sync"
	"time"
)

// ErrHookBlocked is matched (errors.Is) by the error of a Shutdown or Close that returned
// while goroutines of the reactor were still inside a hook of the host that had not returned
// when the context was done (or, for a context without a deadline, within MaxTimeout): the
// goroutine that calls Config.OnReady; or invoker lanes inside a hook that runs on them and
// ignores the call's context (an interceptor, stats handler or per-RPC credentials in
// Config.DialOptions, or Config.Conn's Invoke), which Close waits for half a second more (see
// Close). Every call had been delivered and every other goroutine of the reactor had exited;
// each goroutine left behind exits as soon as its hook returns, and calls no hook again and
// delivers nothing. The error's message names the hooks and says how many lanes were left.
var ErrHookBlocked = errors.New("prpc: a hook of the host had not returned when the reactor closed")

// wakeHost tells the host that settled calls are waiting for Tick, once until the next Tick
// drains them: a value on Ready, and a call of OnReady by the notifier goroutine. It never
// blocks and never calls a hook of the host, so any goroutine may call it: a lane that settled
// a call, the reactor goroutine, Call and Go for a rejected call, and Tick for the calls it
// left behind.
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

// notifier is the goroutine that calls Config.OnReady, so that no lane and not the reactor
// goroutine ever waits on the host's hook: a hook that blocks delays later wake-ups, never a
// call. Kicks that arrive while the hook runs coalesce into one more call.
type notifier struct {
	onReady func()
	kicks   chan struct{} // capacity 1
	stop    chan struct{} // closed by Close once the reactor goroutine has exited
	done    chan struct{} // closed when the notifier goroutine has exited

	mu      sync.Mutex
	quiet   bool // Shutdown or Close has begun: OnReady is not called any more
	running bool // OnReady is running
}

func newNotifier(onReady func()) *notifier {
	return &notifier{
		onReady: onReady,
		kicks:   make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
	}
}

// kick asks for one call of OnReady. It never blocks.
func (n *notifier) kick() {
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

// enter marks OnReady running, unless the notifier is quiet.
func (n *notifier) enter() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.quiet {
		return false
	}
	n.running = true
	return true
}

// silence stops OnReady from being called again: once it returns, no call starts after it. A
// call already running goes on.
func (n *notifier) silence() {
	n.mu.Lock()
	n.quiet = true
	n.mu.Unlock()
}

// join stops the notifier goroutine and waits for it to exit. If OnReady is running, it waits
// only until ctx is done, or for at most maxWait if ctx has no deadline, and then reports
// false: the goroutine exits once OnReady returns.
func (n *notifier) join(ctx context.Context, maxWait time.Duration) bool {
	n.silence()
	close(n.stop)
	n.mu.Lock()
	running := n.running
	n.mu.Unlock()
	if !running {
		<-n.done // it calls no hook any more: it exits at once
		return true
	}
	var bound <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(maxWait)
		defer t.Stop()
		bound = t.C
	}
	select {
	case <-n.done:
		return true
	case <-ctx.Done():
	case <-bound:
	}
	select { // it may have returned meanwhile
	case <-n.done:
		return true
	default:
		return false
	}
}
