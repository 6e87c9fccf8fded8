package reactor

import (
	"container/heap"
	"sync"
	"sync/atomic"
)

// streamSchedule holds the streams' due times, StreamOptions.Timeout and the end of
// Resubscribe's backoffs, for the reactor goroutine, as hedgeSchedule holds the hedges': its
// one timer is armed for the earliest of the deadlines, the hedges and these (engine.wakeAt),
// so that a reactor keeps one timer on its clock whatever its streams do. Any goroutine
// schedules (the opener a timeout, a receiver its backoff); each turn the reactor goroutine
// takes what was scheduled and acts on what is due (engine.streamsDue): it ends a timed-out
// stream, and tells a receiver that its backoff is over.
type streamSchedule struct {
	r *Reactor
	// pending is set while scheduled holds something, so that a turn of a reactor whose
	// streams scheduled nothing costs one atomic load.
	pending atomic.Bool
	mu      sync.Mutex
	// scheduled holds the due times scheduled since the reactor goroutine last took them.
	// Guarded by mu.
	scheduled []streamDue
	// The reactor goroutine's alone: the due times taken, by time, scheduled's other buffer,
	// and due's length after its last prune.
	due   streamHeap
	spare []streamDue
	kept  int
}

// streamDue is what falls due for stream s at at (on the reactor's clock): its timeout, or
// the end of its backoff.
type streamDue struct {
	at      int64
	s       *stream
	backoff bool
}

// schedule hands d to the reactor goroutine, which it wakes through its inbox if nothing was
// waiting to be taken (an earlier due time woke it already). Any goroutine may call it.
func (q *streamSchedule) schedule(d streamDue) {
	q.mu.Lock()
	first := len(q.scheduled) == 0
	q.scheduled = append(q.scheduled, d)
	q.pending.Store(true)
	q.mu.Unlock()
	if first {
		q.r.in.Signal()
	}
}

// take moves the due times scheduled into due, and prunes due of the streams that ended
// once it has doubled since the last prune, so that the timeouts of streams that ended early
// do not pile up. Reactor goroutine only.
func (q *streamSchedule) take() {
	if !q.pending.Load() {
		return
	}
	q.mu.Lock()
	taken := q.scheduled
	q.scheduled = q.spare
	q.pending.Store(false)
	q.mu.Unlock()
	for _, d := range taken {
		heap.Push(&q.due, d)
	}
	clear(taken)
	q.spare = taken[:0]
	if len(q.due) > 2*q.kept+16 {
		live := q.due[:0]
		for _, d := range q.due {
			if !d.s.isEnded() {
				live = append(live, d)
			}
		}
		clear(q.due[len(live):])
		q.due = live
		heap.Init(&q.due)
		q.kept = len(q.due)
	}
}

// next returns when the earliest due time of a stream whose end is not decided falls, and
// false if there is none; it drops the due times of ended streams it finds first. Reactor
// goroutine only.
func (q *streamSchedule) next() (int64, bool) {
	for len(q.due) > 0 {
		if !q.due[0].s.isEnded() {
			return q.due[0].at, true
		}
		heap.Pop(&q.due)
	}
	return 0, false
}

// popDue removes and returns the earliest due time if it falls by now. Reactor goroutine
// only.
func (q *streamSchedule) popDue(now int64) (streamDue, bool) {
	if len(q.due) == 0 || q.due[0].at > now {
		return streamDue{}, false
	}
	return heap.Pop(&q.due).(streamDue), true
}

// streamsDue takes the streams' due times and acts on those that fall by this turn's clock
// (turn's step 6, after the hedges): a timed-out stream ends with ErrTimeout, a receiver
// whose backoff is over is told so. Neither blocks: ending a stream's context runs only
// package context's own functions, and the backoff's signal is a send that cannot block.
func (e *engine) streamsDue() {
	q := &e.r.dueStreams
	q.take()
	for {
		d, ok := q.popDue(e.nowNs)
		if !ok {
			return
		}
		if d.backoff {
			d.s.backoffOver()
		} else {
			d.s.timeOut()
		}
	}
}

// streamHeap orders due times by time.
type streamHeap []streamDue

func (q streamHeap) Len() int           { return len(q) }
func (q streamHeap) Less(i, j int) bool { return q[i].at < q[j].at }
func (q streamHeap) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *streamHeap) Push(x any)        { *q = append(*q, x.(streamDue)) }
func (q *streamHeap) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = streamDue{}
	*q = old[:len(old)-1]
	return x
}
