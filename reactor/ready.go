package reactor

import (
	"sync"

	"github.com/trixnew/prpc/internal/callcore"
)

// readyQueue is the FIFO of admitted calls waiting for an invoker lane. The reactor goroutine
// pushes each turn's admitted calls at once; every lane takes its next call from here as soon
// as its previous one returns, without a round trip through the reactor goroutine, so that
// requests reach the backend as evenly as from a plain worker pool fed by a channel, the
// baseline the burst suite compares prpc with: a hand-off through the reactor goroutine costs
// the backend more CPU per call.
//
// A call settled while it waits here stays until a lane takes it and finds it Dropped.
type readyQueue struct {
	mu      sync.Mutex
	calls   fifo
	waiters int // lanes blocked in take
	closed  bool
	cond    sync.Cond
}

func newReadyQueue() *readyQueue {
	q := &readyQueue{}
	q.cond.L = &q.mu
	return q
}

// push appends cs and wakes as many waiting lanes as it can use.
func (q *readyQueue) push(cs []work) {
	q.mu.Lock()
	for _, c := range cs {
		q.calls.push(c)
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
	for q.calls.len() == 0 {
		if q.closed {
			return work{}, false
		}
		q.waiters++
		q.cond.Wait()
		q.waiters--
	}
	return q.calls.pop(), true
}

// tryTake returns the next call without waiting, or false if there is none.
func (q *readyQueue) tryTake() (work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.calls.len() == 0 {
		return work{}, false
	}
	return q.calls.pop(), true
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
	c   *callcore.Call
	gen uint32
}
