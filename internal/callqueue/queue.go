package callqueue

import (
	"sync"
	"sync/atomic"

	"github.com/trixnew/prpc/internal/callcore"
)

// EventKind says what an inbox event asks of the reactor goroutine.
type EventKind uint8

const (
	EvCancel    EventKind = iota // a call to cancel, by its record: its parent context is done
	EvCancelPos                  // a call to cancel, by its submission position: Promise.Cancel
	EvClose                      // stop admitting; exit once every call has settled
	EvAbort                      // settle every remaining call with ErrClosed
)

// Event is a request to the reactor goroutine: a cancel, Close, or an abort. The rare EvAbort
// carries its cause in the inbox instead (PushAbort). Submitted calls do not pass through the
// inbox: they have a ring of their own (SubmissionRing).
type Event struct {
	Kind     EventKind
	Deadline bool   // EvCancel: the parent context's deadline passed
	Gen      uint32 // the use of c the event is about
	C        *callcore.Call
	Pos      uint32 // EvCancelPos: the call's submission position, modulo 2³²
}

// Completion is an invoker lane's report that it has finished with c, which the reactor
// settled (Cut) while the lane ran it. Completions queue apart from events.
type Completion struct {
	C   *callcore.Call
	Inv int32 // the lane's invoker
}

// Inbox is the reactor goroutine's multi-producer queue of events and completions. Producers
// append under a mutex and wake the consumer only when the queue was empty, so a burst costs
// one wake-up; the consumer swaps the whole batch out at once. Signal wakes the consumer with
// nothing queued, for work it finds elsewhere (a lane's settlements to prune, hedges lanes
// scheduled).
type Inbox struct {
	mu     sync.Mutex
	events []Event
	done   []Completion
	closed bool
	wake   chan struct{} // capacity 1
	// abortCause is the context error of the Close that pushed EvAbort.
	abortCause error
}

// Wake returns the channel, of capacity 1, that the inbox signals when it goes from empty to
// not empty; the consumer blocks on it, and a SubmissionRing made with it signals it too.
func (q *Inbox) Wake() chan struct{} { return q.wake }

// NewInbox returns an empty inbox.
func NewInbox() *Inbox { return &Inbox{wake: make(chan struct{}, 1)} }

// Push appends e and reports whether it was accepted; after close it is not.
func (q *Inbox) Push(e Event) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	wasEmpty := len(q.events) == 0 && len(q.done) == 0
	q.events = append(q.events, e)
	q.mu.Unlock()
	if wasEmpty {
		q.Signal()
	}
	return true
}

// PushAbort pushes EvAbort with its cause, the error of the context Close gave up on.
func (q *Inbox) PushAbort(cause error) {
	q.mu.Lock()
	q.abortCause = cause
	q.mu.Unlock()
	q.Push(Event{Kind: EvAbort})
}

// AbortErr returns the cause PushAbort recorded.
func (q *Inbox) AbortErr() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.abortCause
}

// Complete queues a completion. Lanes finish before the inbox closes, so it is taken, at the
// latest by close; but for a lane that Close gave up on (engine.abandonLanes), whose call was
// delivered without its report: after close it is dropped.
func (q *Inbox) Complete(c Completion) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	wasEmpty := len(q.events) == 0 && len(q.done) == 0
	q.done = append(q.done, c)
	q.mu.Unlock()
	if wasEmpty {
		q.Signal()
	}
}

// Signal wakes the consumer, if it is not already due to wake.
func (q *Inbox) Signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// Pending returns the number of events and completions queued.
func (q *Inbox) Pending() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.events) + len(q.done)
}

// Take swaps the queued events and completions out, giving the buffers (emptied) to the queue
// for reuse.
func (q *Inbox) Take(events []Event, done []Completion) ([]Event, []Completion) {
	clear(events)
	clear(done)
	q.mu.Lock()
	outEvents, outDone := q.events, q.done
	q.events, q.done = events[:0], done[:0]
	q.mu.Unlock()
	return outEvents, outDone
}

// Close refuses further events and returns the events and completions still queued.
func (q *Inbox) Close() ([]Event, []Completion) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	events, done := q.events, q.done
	q.events, q.done = nil, nil
	return events, done
}

// Outbox is the queue of settled calls waiting for Tick. Every push is followed by a wake-up
// of the host (wakeHost, or, as the reactor goroutine finishes, wakeHostLast).
//
// For Stats.OldestUndelivered it keeps, readable from any goroutine, the settle time of the
// first call in calls (first) and of the first call not yet delivered of the batch Tick took
// (taken). A push writes first only into an empty queue, swap moves it to taken, and Tick
// updates taken once at its end: none of them pays more than one atomic store for it.
type Outbox struct {
	mu    sync.Mutex
	calls []*callcore.Call
	n     atomic.Int32 // len(calls), readable without the lock
	first waitingSince // calls[0].Settled, written under mu
	taken waitingSince // written by swap and by the Tick goroutine
}

// waitingSince holds the settle time of a call waiting for Tick, or nothing (its zero value).
type waitingSince struct{ v atomic.Int64 } // the settle time plus one; zero for nothing

func (w *waitingSince) set(settled int64) { w.v.Store(settled + 1) }
func (w *waitingSince) clear()            { w.v.Store(0) }

// get returns the settle time held, and false if none is.
func (w *waitingSince) get() (int64, bool) {
	v := w.v.Load()
	return v - 1, v != 0
}

// Len returns the number of calls queued. Safe from any goroutine.
func (q *Outbox) Len() int { return int(q.n.Load()) }

// SetUndelivered records settled, the settle time of the first call not yet delivered of the
// batch Swap returned, for Oldest. Tick goroutine only.
func (q *Outbox) SetUndelivered(settled int64) { q.taken.set(settled) }

// AllDelivered records that every call of the batch Swap returned was delivered. Tick
// goroutine only.
func (q *Outbox) AllDelivered() { q.taken.clear() }

// Inspect calls f with the queued calls, under the lock: f must not keep the slice or call
// the outbox. For tests that watch the queue.
func (q *Outbox) Inspect(f func(queued []*callcore.Call)) {
	q.mu.Lock()
	defer q.mu.Unlock()
	f(q.calls)
}

// Oldest returns the settle time of the Oldest call waiting for Tick, in the queue or in the
// batch Tick took from it, and false if none waits. Safe from any goroutine. It reads first
// before taken, the order in which swap moves the time from one to the other, so that a swap
// in between cannot hide a call from it.
func (q *Outbox) Oldest() (int64, bool) {
	f, okf := q.first.get()
	t, okt := q.taken.get()
	switch {
	case okf && okt:
		return min(f, t), true
	case okt:
		return t, true
	}
	return f, okf
}

// tryLock takes the lock if it can within a few attempts: an append holds it only for one
// append of at most outboxChunk calls, unless the appending thread has lost its CPU.
func (q *Outbox) tryLock() bool {
	for range 64 {
		if q.mu.TryLock() {
			return true
		}
	}
	return false
}

// outboxChunk bounds how many calls push appends under one hold of the lock, so that a Tick
// swapping the queue never waits behind a whole batch (Close's abort settles every call at
// once).
const outboxChunk = 256

// Push appends cs, in order, in chunks of at most outboxChunk calls per hold of the lock. The
// caller then wakes the host. Safe from any goroutine.
func (q *Outbox) Push(cs ...*callcore.Call) {
	for len(cs) > 0 {
		k := min(len(cs), outboxChunk)
		q.mu.Lock()
		if len(q.calls) == 0 {
			q.first.set(cs[0].At(cs[0].Settled))
		}
		q.calls = append(q.calls, cs[:k]...)
		q.n.Store(int32(len(q.calls)))
		q.mu.Unlock()
		cs = cs[k:]
	}
}

// Swap returns the queued calls and empties the queue, which keeps spare, an empty slice,
// as its storage. It costs the same for one call as for a million. With wait false it gives
// up, returning false, rather than wait while another goroutine appends: that goroutine wakes
// the host once it is done, so a Tick need never wait for a lane its OS thread has preempted.
func (q *Outbox) Swap(spare []*callcore.Call, wait bool) ([]*callcore.Call, bool) {
	if wait {
		q.mu.Lock()
	} else if !q.tryLock() {
		return spare, false
	}
	out := q.calls
	q.calls = spare[:0]
	q.n.Store(0)
	q.taken.v.Store(q.first.v.Load()) // before first is cleared: see oldest
	q.first.clear()
	q.mu.Unlock()
	return out, true
}
