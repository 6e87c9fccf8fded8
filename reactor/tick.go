package reactor

import (
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
)

// hostSide is the host goroutine's part of the reactor: admission (Call, Go) and delivery
// (Tick, Shutdown, Close). admitted is the calls admitted and not yet delivered, which
// MaxOutstanding bounds; Call and Go from another goroutine write it too. Any goroutine pushes
// to hostq (deliverNext); only Tick takes from it.
type hostSide struct {
	admitted    atomic.Int64
	ticking     atomic.Bool // Tick, Shutdown or Close holds the host role (enterHost)
	delivery    []*callcore.Call
	head        int
	host        host
	recycled    []*callcore.Call    // records this Tick freed, for freed
	deliveredAt int64               // the time of the delivery in progress, for its latency
	hostq       callqueue.HostQueue // rejected at submission or redelivered: never waits on a lane
}

// Tick runs the callbacks of settled calls on the calling goroutine, in completion order,
// until budget is spent. It delivers only calls that were settled when it started, so
// callbacks that submit new calls cannot stretch it; it delivers at least one waiting call
// (a budget ≤ 0 delivers exactly one) and keeps the rest, in order, for the next Tick,
// signalling Ready again. It reads the clock after each callback, so it overruns the budget
// by one callback at most. Streams' messages are delivered in the same order and under the
// same budget, each a callback of its own, or with StreamHandler.OnMessages each run of one
// stream's messages one callback.
//
// Calls that Call or Go rejected at submission, and callbacks registered on a promise already
// delivered, always run at the first Tick that starts after Call (or Go, Then, OnError,
// OnSettled, Always) returned, after the outcomes that were already waiting when that Tick
// started, unless the budget runs out first.
//
// Tick never waits for prpc's other goroutines: if an invoker lane is appending to the
// delivery queue at that instant and its thread has lost its CPU, Tick delivers only what it
// already holds, and Ready fires again once the lane is done. Beyond its callbacks, a Tick
// costs the same whatever the backlog: it takes the queue of settled calls by swapping
// slices, never by copying. An idle Tick is a few atomic operations and allocates nothing
// (BenchmarkIdleTick measures it).
//
// After Close has returned, Tick has no call left to settle: Close delivered every outcome and
// ran every callback waiting then. It still runs what is queued for it later, as before Close:
// the callbacks of calls made after Close, which fail at once with ErrClosed, and callbacks
// added to promises already delivered, each at the first Tick that starts after Call (or Go,
// Then, OnError, OnSettled, Always) returned; Ready signals them, OnReady does not. With
// nothing of that kind waiting, Tick returns a zero TickReport at once.
//
// Tick is for one goroutine at a time. Calling Tick or Close from inside a callback, or while
// another goroutine is inside Tick or Close, panics with a "prpc:" message that names the
// case and says that the refused call did nothing: a Close refused from inside a callback
// leaves the reactor open. A panic in a callback is isolated like any other: it goes to
// Config.OnCallbackPanic (by default, to the log), and the outer Tick goes on.
func (r *Reactor) Tick(budget time.Duration) TickReport {
	// enterHost's check, written out: enterHost is too large to be inlined.
	if !r.ticking.CompareAndSwap(false, true) {
		panic(refusedEntry("Tick"))
	}
	defer r.ticking.Store(false)
	return r.tick(budget, false)
}

// enterHost takes the host role for Close (what), or panics with refusedEntry's message if
// Tick or Close holds it. Tick makes the same check itself.
func (r *Reactor) enterHost(what string) {
	if !r.ticking.CompareAndSwap(false, true) {
		panic(refusedEntry(what))
	}
}

// tick delivers settled calls; with all set it ignores the budget.
func (r *Reactor) tick(budget time.Duration, all bool) TickReport {
	// Disarm before looking, even when idle: a wake-up whose calls an earlier Tick already
	// took must not leave armed set, or the next completion would not wake the host. A
	// wake-up the notifier has not yet turned into a call of OnReady is thereby withdrawn
	// (see notifier.enter): this Tick takes its calls, and re-arms for any it leaves.
	r.armed.Store(false)
	if r.head == len(r.delivery) && r.out.Len() == 0 && r.hostq.Idle() {
		return TickReport{}
	}
	// This Tick may deliver the calls settled before it started: the rest of the batch in
	// hand (delivery[head:]), then the first fresh calls of the outbox, then the calls of the
	// host queue.
	t := tickBudget{r: r, budget: budget, all: all}
	t.start = r.now()
	t.now = t.start
	mark := r.hostq.Mark()
	left, busy := r.deliverSettled(&t)
	// The host queue comes last, and never depends on another goroutine: a lane holding the
	// outbox cannot hold these back.
	r.deliverHostQueue(&t, mark)
	if t.delivered > 0 && (all || budget <= 0) {
		t.now = r.now() // for Elapsed: spent did not read the clock
	}
	r.recycled = r.freed.Give(r.recycled)
	remaining := left + r.hostq.Waiting()
	r.keepUndelivered()
	// Leftovers need a wake-up, unless a completion during this Tick already sent one (that
	// one stands for the leftovers too, so OnReady still runs at most once between drains),
	// or one is on its way from the lane holding the outbox.
	if remaining > 0 && !busy {
		r.wakeHost()
	}
	return TickReport{Delivered: t.delivered, Remaining: remaining, Elapsed: time.Duration(t.now - t.start)}
}

// tickBudget is one Tick's time: the clock is read after every delivery, so that a Tick
// overruns its budget by one callback at most, whatever its callbacks cost.
type tickBudget struct {
	r          *Reactor
	budget     time.Duration
	all        bool  // ignore the budget (Shutdown and Close's drain)
	start, now int64 // when the Tick started, and the clock's last reading
	delivered  int
	exhausted  bool // the clock has shown the budget spent: nothing more is delivered
}

// spent reports whether the budget is spent.
func (t *tickBudget) spent() bool {
	switch {
	case t.all:
		return false
	case t.budget <= 0, t.exhausted:
		return true
	}
	t.now = t.r.now()
	t.exhausted = time.Duration(t.now-t.start) >= t.budget
	return t.exhausted
}

// deliverSettled delivers the calls the lanes and the reactor goroutine settled before the
// Tick started, in completion order, until the budget is spent. It returns how many of those
// it left, and busy if a lane was appending to the outbox, whose wake-up brings the host back.
// The outbox's batch is taken by swapping slices, never copied, so that what a Tick costs
// beyond its callbacks does not grow with the backlog left by a host that stopped ticking.
func (r *Reactor) deliverSettled(t *tickBudget) (left int, busy bool) {
	end := len(r.delivery)
	fresh := r.out.Len()
	for {
		if r.head == end {
			if fresh == 0 {
				break
			}
			// delivery is used up (each delivered entry was cleared): the outbox keeps its
			// storage, and its batch, in which calls settled since start follow the fresh
			// ones, becomes the batch in hand. A budgeted Tick does not wait for the lock.
			batch, ok := r.out.Swap(r.delivery[:0], t.all)
			if !ok {
				busy = true
				break
			}
			r.delivery = batch
			r.head, end, fresh = 0, fresh, 0
		}
		c := r.delivery[r.head]
		if c.Run {
			t.delivered += r.deliverRun(c, end, t.now)
		} else {
			r.delivery[r.head] = nil
			r.head++
			r.deliver(c, t.now)
			t.delivered++
		}
		if t.spent() {
			break
		}
	}
	return end - r.head + fresh, busy
}

// deliverHostQueue delivers the host queue's calls pushed before mark while the budget lasts,
// at least one if the Tick has delivered none.
func (r *Reactor) deliverHostQueue(t *tickBudget, mark *callqueue.HostNode) {
	for t.delivered == 0 || !t.spent() {
		h := r.hostq.Next(mark)
		if h == nil {
			return
		}
		r.deliveredAt = t.now
		h.Deliver(&r.host, nil)
		t.delivered++
	}
}

// keepUndelivered tells the outbox what the Tick left in hand: nothing, or calls from the
// oldest one's settle time on, for Stats' oldest-undelivered age.
func (r *Reactor) keepUndelivered() {
	if r.head == len(r.delivery) {
		r.delivery, r.head = r.delivery[:0], 0
		r.out.AllDelivered()
		return
	}
	c := r.delivery[r.head]
	r.out.SetUndelivered(c.At(c.Settled))
}

// deliver makes c's outcome visible, accounts for it on its first delivery (Delivered), and
// runs its callbacks, each isolated from the others' panics (Recover).
func (r *Reactor) deliver(c *callcore.Call, now int64) {
	r.deliveredAt = now
	if r.owned != nil {
		r.disown(c.Req, c.Extra) // before the outcome is visible: the request is the caller's again
	}
	c.Target.Deliver(&r.host, c)
}

// deliverRun delivers stream carrier c, which is delivery[head], with the carriers of its
// stream that follow it before end, in one callback of the stream's batch handler, and
// returns how many it delivered. Only carriers that are next to each other in the batch in
// hand make a run: a stream's messages keep their place among the calls' completions and
// the other streams' messages.
func (r *Reactor) deliverRun(c *callcore.Call, end int, now int64) int {
	j := r.head + 1
	for j < end && (r.delivery[j].Target == c.Target || mutation == "stream-run-by-method" && r.delivery[j].Run && r.delivery[j].Ops == c.Ops) {
		j++
	}
	run := r.delivery[r.head:j]
	r.head = j
	r.deliveredAt = now
	c.Target.(callcore.RunTarget).DeliverRun(&r.host, run)
	clear(run)
	return len(run)
}

// host is the reactor as delivering a call sees it (callcore.Host): it runs on the Tick
// goroutine only.
type host struct{ r *Reactor }

// Delivered implements callcore.Host: it counts an admitted call's outcome, then releases its
// slot, and keeps its record, recycled, for the reactor goroutine, which gets this Tick's
// records at its end. Counted first, so that Stats.Pending, which counts a call only after
// its admission, never counts a call admitted into the slot before this one has left it.
func (h *host) Delivered(c *callcore.Call) {
	if c == nil {
		return // rejected at submission: counted then, and no record
	}
	r := h.r
	method := r.method(c.Ops)
	p, sent := phasesOf(c, r.deliveredAt)
	r.mu.Lock()
	r.counts.pending--
	if c.Err == nil {
		r.counts.succeed(method.counters)
	} else {
		r.counts.fail(method.counters, errCode(c.Err), c.Reason)
		if !sent {
			r.counts.notSent(method.counters)
		}
	}
	method.counters.latency.add(p)
	method.counters.hist.observe(p)
	r.latency.add(p)
	r.mu.Unlock()
	if mutation != "leak-admission" || c.Err == nil {
		r.admitted.Add(-1)
	}
	c.Recycle()
	r.recycled = append(r.recycled, c)
}

// Recover implements callcore.Host.
func (h *host) Recover() {
	if p := recover(); p != nil {
		h.r.callbackPanicked(p, debug.Stack())
	}
}

func (r *Reactor) callbackPanicked(p any, stack []byte) {
	if r.cfg.OnCallbackPanic == nil {
		r.cfg.Logger.Error("prpc: promise callback panicked", "panic", p, "stack", string(stack))
		return
	}
	defer func() {
		if p2 := recover(); p2 != nil {
			r.cfg.Logger.Error("prpc: OnCallbackPanic panicked", "panic", p2, "callback panic", p)
		}
	}()
	r.cfg.OnCallbackPanic(p)
}
