package reactor

import (
	"sync"
	"sync/atomic"

	"github.com/trixnew/prpc/internal/callcore"
)

// eventKind says what an inbox event asks of the reactor goroutine.
type eventKind uint8

const (
	evCancel    eventKind = iota // a call to cancel, by its record: its parent context is done
	evCancelPos                  // a call to cancel, by its submission position: Promise.Cancel
	evClose                      // stop admitting; exit once every call has settled
	evAbort                      // settle every remaining call with ErrClosed
)

// The rare evAbort carries its cause in the inbox instead (pushAbort).
// Submitted calls do not pass through the inbox: they have a ring of their own
// (submissionRing).
type event struct {
	kind     eventKind
	deadline bool   // evCancel: the parent context's deadline passed
	gen      uint32 // the use of c the event is about
	c        *callcore.Call
	pos      uint32 // evCancelPos: the call's submission position, modulo 2³²
}

// completion is an invoker lane's report that it has finished with c, which the reactor
// settled (Cut) while the lane ran it. Completions queue apart from events.
type completion struct {
	c   *callcore.Call
	inv int32 // the lane's invoker
}

// inbox is the reactor goroutine's multi-producer queue of events and completions. Producers
// append under a mutex and wake the consumer only when the queue was empty, so a burst costs
// one wake-up; the consumer swaps the whole batch out at once.
type inbox struct {
	mu     sync.Mutex
	events []event
	done   []completion
	closed bool
	wake   chan struct{} // capacity 1
	// abortCause is the context error of the Close that pushed evAbort.
	abortCause error
}

func newInbox() *inbox { return &inbox{wake: make(chan struct{}, 1)} }

// push appends e and reports whether it was accepted; after close it is not.
func (q *inbox) push(e event) bool {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	wasEmpty := len(q.events) == 0 && len(q.done) == 0
	q.events = append(q.events, e)
	q.mu.Unlock()
	if wasEmpty {
		q.signal()
	}
	return true
}

// pushAbort pushes evAbort with its cause, the error of the context Close gave up on.
func (q *inbox) pushAbort(cause error) {
	q.mu.Lock()
	q.abortCause = cause
	q.mu.Unlock()
	q.push(event{kind: evAbort})
}

// abortErr returns the cause pushAbort recorded.
func (q *inbox) abortErr() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.abortCause
}

// complete queues a completion. Lanes finish before the inbox closes, so it is taken, at the
// latest by close; but for a lane that Close gave up on (engine.abandonLanes), whose call was
// delivered without its report: after close it is dropped.
func (q *inbox) complete(c completion) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	wasEmpty := len(q.events) == 0 && len(q.done) == 0
	q.done = append(q.done, c)
	q.mu.Unlock()
	if wasEmpty {
		q.signal()
	}
}

func (q *inbox) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take swaps the queued events and completions out, giving the buffers (emptied) to the queue
// for reuse.
func (q *inbox) take(events []event, done []completion) ([]event, []completion) {
	clear(events)
	clear(done)
	q.mu.Lock()
	outEvents, outDone := q.events, q.done
	q.events, q.done = events[:0], done[:0]
	q.mu.Unlock()
	return outEvents, outDone
}

// close refuses further events and returns the events and completions still queued.
func (q *inbox) close() ([]event, []completion) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	events, done := q.events, q.done
	q.events, q.done = nil, nil
	return events, done
}

// outbox is the queue of settled calls waiting for Tick. Every push is followed by a wake-up
// of the host (wakeHost, or Ready directly at shutdown).
//
// For Stats.OldestUndelivered it keeps, readable from any goroutine, the settle time of the
// first call in calls (first) and of the first call not yet delivered of the batch Tick took
// (taken). A push writes first only into an empty queue, swap moves it to taken, and Tick
// updates taken once at its end: none of them pays more than one atomic store for it.
type outbox struct {
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

// oldest returns the settle time of the oldest call waiting for Tick, in the queue or in the
// batch Tick took from it, and false if none waits. Safe from any goroutine. It reads first
// before taken, the order in which swap moves the time from one to the other, so that a swap
// in between cannot hide a call from it.
func (q *outbox) oldest() (int64, bool) {
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
func (q *outbox) tryLock() bool {
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

func (q *outbox) push(cs ...*callcore.Call) {
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

// swap returns the queued calls and empties the queue, which keeps spare, an empty slice,
// as its storage. It costs the same for one call as for a million. With wait false it gives
// up, returning false, rather than wait while another goroutine appends: that goroutine wakes
// the host once it is done, so a Tick need never wait for a lane its OS thread has preempted.
func (q *outbox) swap(spare []*callcore.Call, wait bool) ([]*callcore.Call, bool) {
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
