package callqueue

import (
	"sync"

	"github.com/trixnew/prpc/internal/callcore"
)

// ReadyQueue holds the admitted calls waiting for an invoker lane: critical calls first, then
// the others, each class in submission order. The reactor goroutine pushes each turn's
// admitted calls at once; every lane takes its next call from here as soon as its previous
// one returns, without a round trip through the reactor goroutine, so that requests reach the
// backend as evenly as from a plain worker pool fed by a channel, the baseline the burst
// suite compares prpc with: a hand-off through the reactor goroutine costs the backend more
// CPU per call.
//
// A call settled while it waits here stays until a lane takes it and finds it Dropped.
type ReadyQueue struct {
	mu       sync.Mutex
	critical fifo // calls of critical methods or with calls.Options.Critical
	calls    fifo // every other call
	waiters  int  // lanes blocked in take
	closed   bool
	cond     sync.Cond
}

// NewReadyQueue returns an empty, open ready queue.
func NewReadyQueue() *ReadyQueue {
	q := &ReadyQueue{}
	q.cond.L = &q.mu
	return q
}

// Push appends cs, each to its class, and wakes as many waiting lanes as it can use.
func (q *ReadyQueue) Push(cs []Work) {
	q.mu.Lock()
	for _, c := range cs {
		if c.Critical {
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

// Take returns the next call, waiting for one; it returns false once the queue is closed
// and empty.
func (q *ReadyQueue) Take() (Work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.size() == 0 {
		if q.closed {
			return Work{}, false
		}
		q.waiters++
		q.cond.Wait()
		q.waiters--
	}
	return q.pop(), true
}

// TryTake returns the next call without waiting, or false if there is none.
func (q *ReadyQueue) TryTake() (Work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.size() == 0 {
		return Work{}, false
	}
	return q.pop(), true
}

// Len returns the number of calls waiting, dropped ones included.
func (q *ReadyQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.size()
}

// size returns the number of calls waiting; the caller holds mu.
func (q *ReadyQueue) size() int { return q.critical.len() + q.calls.len() }

// pop returns the next call, critical first; the caller holds mu and has seen one waiting.
func (q *ReadyQueue) pop() Work {
	if q.critical.len() > 0 {
		return q.critical.pop()
	}
	return q.calls.pop()
}

// Close makes take return false once the queue is empty.
func (q *ReadyQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// fifo is a growable ring of calls waiting for an invoker slot.
type fifo struct {
	buf        []Work
	head, size int
}

func (f *fifo) len() int { return f.size }

func (f *fifo) push(c Work) {
	if f.size == len(f.buf) {
		n := max(16, 2*len(f.buf))
		buf := make([]Work, n)
		for i := 0; i < f.size; i++ {
			buf[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = buf, 0
	}
	f.buf[(f.head+f.size)%len(f.buf)] = c
	f.size++
}

func (f *fifo) pop() Work {
	c := f.buf[f.head]
	f.buf[f.head] = Work{}
	f.head = (f.head + 1) % len(f.buf)
	f.size--
	return c
}

// Work is an entry of the ready queue: one use of a record. A lane claims it only if the
// record is still on that use, Unclaimed.
type Work struct {
	C        *callcore.Call
	Gen      uint32
	Critical bool // taken before every call that is not
}
