package callqueue

import (
	"sync"

	"github.com/trixnew/prpc/internal/callcore"
)

// ReadyQueue holds the admitted calls waiting for an invoker lane: critical calls first, then
// the others, each class in submission order while the queue drains, and newest first while it
// stands (adaptive LIFO, below). The reactor goroutine pushes each turn's admitted calls at
// once, and the hedges of hedged calls as they fall due (a lane pushes a hedge whose delay is
// zero); every lane takes its next call from here as soon as its previous one returns, without
// a round trip through the reactor goroutine, so that requests reach the backend as evenly as
// from a plain worker pool fed by a channel, the baseline the burst suite compares prpc with: a
// hand-off through the reactor goroutine costs the backend more CPU per call.
//
// With an adaptive limit (NewReadyQueue's LimitConfig) it is also the gate on the calls in
// flight: a lane takes a call only while the places that lanes hold are fewer than the limit,
// and each take first gives back the place of the lane's previous call, with what that call
// said about the backend (Slot), under the same lock. Calls above the limit wait here, in
// their order. Once the queue is closed the gate is open: every call left is settled, and the
// lanes must take them all to exit, whatever places lanes stuck in a hook of the host hold.
//
// A call settled while it waits here stays until a lane takes it and finds it Dropped.
//
// Adaptive LIFO, as Facebook's services serve their queues ("Fail at Scale"): a queue that has
// not been empty for StandingAfter stands, the lanes falling behind the calls submitted; the
// lanes then take the newest call of each class first, so that the calls sent are those with
// the most time left, which can still succeed, rather than the oldest, which would reach the
// backend with too little time left to finish and fail there after using its capacity. The
// oldest wait, and fail at their deadline, never sent, or are shed by the lane that reaches
// them (calls.ErrShed). Once the lanes empty the queue it is served in submission order again.
// The queue learns the time only from Push, which the reactor goroutine calls with its clock
// reading of the turn (or of the moment it queues a hedge), and a lane only to queue a hedge
// without delay: a lane that takes calls reads no clock for it.
type ReadyQueue struct {
	mu       sync.Mutex
	critical fifo  // calls of critical methods or with calls.Options.Critical
	calls    fifo  // every other call
	gate     *aimd // the adaptive limit; nil without
	waiters  int   // lanes blocked in take
	closed   bool
	cond     sync.Cond
	// since is when a push found the queue empty, on the pushers' clock: the queue has not
	// been empty since. Zero while it is empty.
	since int64
	// standing is set by a push once the queue has not been empty for StandingAfter, and
	// cleared when a take empties it: the lanes take the newest call first.
	standing bool
}

// StandingAfter is how long the ready queue must have been non-empty to stand (adaptive
// LIFO), in nanoseconds: CoDel's interval, long enough that a burst the lanes work through
// within a few backend round trips keeps its order, short enough, at two ticks of a 20-tick
// game loop, that an overload serves fresh calls within a fraction of the usual timeouts.
const StandingAfter = int64(100e6)

// NewReadyQueue returns an empty, open ready queue, with an adaptive in-flight limit if limit
// is not nil.
func NewReadyQueue(limit *LimitConfig) *ReadyQueue {
	q := &ReadyQueue{}
	q.cond.L = &q.mu
	if limit != nil {
		q.gate = &aimd{cfg: *limit, limit: limit.Initial}
	}
	return q
}

// Push appends cs, each to its class, and wakes as many waiting lanes as it can use. now is the
// pusher's clock reading, nanoseconds on a clock that only moves forward, for adaptive LIFO.
func (q *ReadyQueue) Push(cs []Work, now int64) {
	q.mu.Lock()
	switch {
	case q.size() == 0:
		q.since = now
	case now-q.since >= StandingAfter:
		q.standing = true
	}
	for _, c := range cs {
		if c.Critical {
			q.critical.push(c)
		} else {
			q.calls.push(c)
		}
	}
	wake := min(len(cs), q.waiters)
	if q.gate != nil {
		wake = min(wake, q.gate.free())
	}
	q.mu.Unlock()
	for range wake {
		q.cond.Signal()
	}
}

// Take gives back s's place under the limit, if it holds one, and returns the next call,
// waiting for one and, with a limit, for a place, which s then holds; it returns false once
// the queue is closed and empty.
func (q *ReadyQueue) Take(s *Slot) (Work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gate != nil {
		q.gate.release(s)
	}
	for !q.takeable() {
		if q.closed {
			return Work{}, false
		}
		q.waiters++
		q.cond.Wait()
		q.waiters--
	}
	return q.take(s), true
}

// TryTake is Take without waiting: it returns false if no call, or no place, is free.
func (q *ReadyQueue) TryTake(s *Slot) (Work, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.gate != nil {
		q.gate.release(s)
	}
	if !q.takeable() {
		return Work{}, false
	}
	return q.take(s), true
}

// takeable reports whether a lane may take a call now: one waits, and, with a limit and the
// queue open, a place is free. The caller holds mu.
func (q *ReadyQueue) takeable() bool {
	return q.size() > 0 && (q.gate == nil || q.closed || q.gate.open())
}

// take returns the next call, critical first, giving s a place with a limit. A release that
// grew the limit leaves a place no lane was woken for: the next take wakes as many waiting
// lanes as it can use. Otherwise a lane's release frees only the place it takes again, and
// Push has woken the lanes for the others, so that a take wakes nobody: waking lanes on every
// take would cost futex calls per call while the backend keeps up. The caller holds mu and has
// seen takeable.
func (q *ReadyQueue) take(s *Slot) Work {
	w := q.pop()
	if q.size() == 0 {
		q.since, q.standing = 0, false
	}
	if q.gate != nil {
		q.gate.take(s)
		if q.gate.grown {
			q.gate.grown = false
			for range min(q.size(), q.gate.free(), q.waiters) {
				q.cond.Signal()
			}
		}
	}
	return w
}

// Limit returns the adaptive limit and the places lanes hold under it, or zeros without one.
func (q *ReadyQueue) Limit() (limit, running int) {
	if q.gate == nil {
		return 0, 0
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.gate.limit, q.gate.running
}

// Len returns the number of calls waiting, dropped ones included.
func (q *ReadyQueue) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.size()
}

// size returns the number of calls waiting; the caller holds mu.
func (q *ReadyQueue) size() int { return q.critical.len() + q.calls.len() }

// Standing reports whether the queue stands: the lanes take the newest call first.
func (q *ReadyQueue) Standing() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.standing
}

// pop returns the next call, critical first, the oldest of its class, or the newest while the
// queue stands; the caller holds mu and has seen one waiting.
func (q *ReadyQueue) pop() Work {
	f := &q.calls
	if q.critical.len() > 0 {
		f = &q.critical
	}
	if q.standing {
		return f.popNewest()
	}
	return f.pop()
}

// Close makes Take return false once the queue is empty, and opens the gate.
func (q *ReadyQueue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.cond.Broadcast()
}

// fifo is a growable ring of calls waiting for an invoker slot, taken from either end.
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

// popNewest removes and returns the entry pushed last.
func (f *fifo) popNewest() Work {
	i := (f.head + f.size - 1) % len(f.buf)
	c := f.buf[i]
	f.buf[i] = Work{}
	f.size--
	return c
}

// Work is an entry of the ready queue: one use of a record, or another attempt of a hedged
// call. A lane claims a record only if it is still on that use, Unclaimed.
type Work struct {
	C        *callcore.Call
	Gen      uint32
	Critical bool // taken before every call that is not
	// Attempt says that C is not a call but stands for a hedged call (its flight, in the
	// reactor) that is to send another attempt: a record no call is submitted with, which the
	// reactor maps to that flight. (A flag rather than a field of another type keeps Work at
	// 16 bytes.)
	Attempt bool
}
