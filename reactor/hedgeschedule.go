package reactor

import (
	"container/heap"
	"sync"
	"time"
)

// hedgeSchedule holds the due times of hedged calls' next attempts (MethodPolicy.Hedge), for
// the reactor goroutine, which keeps them as it keeps its calls' deadlines: its one timer is
// armed for the earlier of the two (engine.arm), and each turn queues the attempts due
// (engine.hedge). Only a reactor that hedges a method has one. The lane that starts an attempt
// of a flight schedules the next one (schedule); once it is due, the reactor goroutine calls
// flightTable.queueHedge, which sends it only if the flight is still undecided and the budget
// allows.
type hedgeSchedule struct {
	r  *Reactor
	mu sync.Mutex
	// scheduled holds the attempts lanes scheduled since the reactor goroutine last took them
	// (take), in the order they were scheduled. Guarded by mu.
	scheduled []hedgeDue
	// The reactor goroutine's alone: the attempts it has taken, by due time, and scheduled's
	// other buffer, empty.
	due   hedgeHeap
	spare []hedgeDue
}

// hedgeDue is attempt n of flight f, due at at (on the reactor's clock).
type hedgeDue struct {
	at int64
	f  *flight
	n  int
}

func newHedgeSchedule(r *Reactor) *hedgeSchedule { return &hedgeSchedule{r: r} }

// schedule queues attempt n of f after delay d: at once, on the calling lane, if d is zero;
// otherwise it hands the attempt to the reactor goroutine, which it wakes through its inbox
// if no attempt was waiting to be taken (an earlier one woke it already). Any lane may call
// it.
func (s *hedgeSchedule) schedule(f *flight, n int, d time.Duration) {
	if d <= 0 {
		s.r.flights.queueHedge(f, n)
		return
	}
	at := s.r.now() + int64(d)
	s.mu.Lock()
	first := len(s.scheduled) == 0
	s.scheduled = append(s.scheduled, hedgeDue{at: at, f: f, n: n})
	s.mu.Unlock()
	if first {
		s.r.in.Signal()
	}
}

// take moves the attempts lanes have scheduled into due. Reactor goroutine only.
func (s *hedgeSchedule) take() {
	s.mu.Lock()
	taken := s.scheduled
	s.scheduled = s.spare
	s.mu.Unlock()
	for _, d := range taken {
		heap.Push(&s.due, d)
	}
	clear(taken)
	s.spare = taken[:0]
}

// next returns when the earliest attempt taken is due, and false if none is. Reactor
// goroutine only.
func (s *hedgeSchedule) next() (int64, bool) {
	if len(s.due) == 0 {
		return 0, false
	}
	return s.due[0].at, true
}

// popDue removes and returns the earliest attempt taken if it is due by now. Reactor goroutine
// only.
func (s *hedgeSchedule) popDue(now int64) (hedgeDue, bool) {
	if len(s.due) == 0 || s.due[0].at > now {
		return hedgeDue{}, false
	}
	return heap.Pop(&s.due).(hedgeDue), true
}

// drop forgets the attempts taken, for a reactor goroutine that has no call left unsettled:
// none of them can be sent. Reactor goroutine only.
func (s *hedgeSchedule) drop() {
	clear(s.due)
	s.due = s.due[:0]
}

// hedgeHeap orders due attempts by time.
type hedgeHeap []hedgeDue

func (q hedgeHeap) Len() int           { return len(q) }
func (q hedgeHeap) Less(i, j int) bool { return q[i].at < q[j].at }
func (q hedgeHeap) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *hedgeHeap) Push(x any)        { *q = append(*q, x.(hedgeDue)) }
func (q *hedgeHeap) Pop() any {
	old := *q
	x := old[len(old)-1]
	old[len(old)-1] = hedgeDue{}
	*q = old[:len(old)-1]
	return x
}
