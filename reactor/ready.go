package reactor

import (
	"sync"

	"github.com/trixnew/prpc/internal/callcore"
)

// readyQueue holds the admitted calls waiting for an invoker lane: critical calls first, then
// the others, each class in submission order. The reactor goroutine pushes each turn's
// admitted calls at once; every lane takes its next call from here as soon as its previous
// one returns, without a round trip through the reactor goroutine, so that requests reach the
// backend as evenly as from a plain worker pool fed by a channel, the baseline the burst
// suite compares prpc with: a hand-off through the reactor goroutine costs the backend more
// CPU per call.
//
// A call settled while it waits here stays until a lane takes it and finds it Dropped.
type readyQueue struct {
	mu       sync.Mutex
	critical fifo // calls of critical methods or with calls.Options.Critical
	calls    fifo // every other call
	waiters  int  // lanes blocked in take
	closed   bool
	cond     sync.Cond
}

func newReadyQueue() *readyQueue {
	q := &readyQueue{}
	q.cond.L = &q.mu
	return q
}

// push appends cs, each to its class, and wakes as many waiting lanes as it can use.
func (q *readyQueue) push(cs []work) {
	q.mu.Lock()
	for _, c := range cs {
		if c.critical {
			q.critical.push(c)
		} else {
			q.calls.push(c)
		}
	}
	wake := min(len(cs), q.waiters)
	q.mu.Unlock()
	for range wake {
		q.cond.Signal()
	}
}

// take returns the next call, waiting for one; it returns false once the queue is closed
// and empty.
func (q *readyQueue) take() (work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.len() == 0 {
		if q.closed {
			return work{}, false
		}
		q.waiters++
		q.cond.Wait()
		q.waiters--
	}
	return q.pop(), true
}

// tryTake returns the next call without waiting, or false if there is none.
func (q *readyQueue) tryTake() (work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.len() == 0 {
		return work{}, false
	}
	return q.pop(), true
}

// len returns the number of calls waiting; the caller holds mu.
func (q *readyQueue) len() int { return q.critical.len() + q.calls.len() }

// pop returns the next call, critical first; the caller holds mu and has seen one waiting.
func (q *readyQueue) pop() work {
	if q.critical.len() > 0 {
		return q.critical.pop()
	}
	return q.calls.pop()
}

// close makes take return false once the queue is empty.
func (q *readyQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// fifo is a growable ring of calls waiting for an invoker slot.
type fifo struct {
	buf        []work
	head, size int
}

func (f *fifo) len() int { return f.size }

func (f *fifo) push(c work) {
	if f.size == len(f.buf) {
		n := max(16, 2*len(f.buf))
		buf := make([]work, n)
		for i := 0; i < f.size; i++ {
			buf[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = buf, 0
	}
	f.buf[(f.head+f.size)%len(f.buf)] = c
	f.size++
}

func (f *fifo) pop() work {
	c := f.buf[f.head]
	f.buf[f.head] = work{}
	f.head = (f.head + 1) % len(f.buf)
	f.size--
	return c
}

// work is an entry of the ready queue: one use of a record. A lane claims it only if the
// record is still on that use, Unclaimed.
type work struct {
	c        *callcore.Call
	gen      uint32
	critical bool // taken before every call that is not
}
