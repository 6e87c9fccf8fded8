package reactor

import (
	"container/heap"
	"sync"
	"time"
)

// hedger is the goroutine that queues hedged calls' next attempts once their delay has passed
// (MethodPolicy.Hedge): a heap of due times and one timer of the reactor's clock, so that a
// manual clock drives it in tests. Only a reactor that hedges a method has one. Lanes schedule
// the next attempt of a flight when they start one; the hedger calls flightTable.queueHedge,
// which sends it only if the flight is still undecided and the budget allows.
type hedger struct {
	r     *Reactor
	mu    sync.Mutex
	due   hedgeHeap
	wake  chan struct{} // an earlier due time was scheduled
	stop  chan struct{} // closed by the reactor goroutine as it finishes
	exit  chan struct{} // closed by the hedger once it has stopped
	timer Timer
	// started is set by start, before the goroutine runs (the simulation runs the reactor
	// without its goroutines, and the hedger's part itself: fireDue).
	started bool
}

// hedgeDue is attempt n of flight f, due at at (on the reactor's clock).
type hedgeDue struct {
	at int64
	f  *flight
	n  int
}

func newHedger(r *Reactor) *hedger {
	return &hedger{r: r, wake: make(chan struct{}, 1), stop: make(chan struct{}), exit: make(chan struct{})}
}

// schedule queues attempt n of f after delay d; at once, on the calling lane, if d is zero.
func (h *hedger) schedule(f *flight, n int, d time.Duration) {
	if d <= 0 {
		h.r.flights.queueHedge(f, n)
		return
	}
	h.mu.Lock()
	heap.Push(&h.due, hedgeDue{at: h.r.now() + int64(d), f: f, n: n})
	first := h.due[0].f == f && h.due[0].n == n
	h.mu.Unlock()
	if first {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

// start starts the hedger's goroutine.
func (h *hedger) start() {
	h.started = true
	go h.run()
}

// run is the hedger's goroutine: it queues each attempt once due, until stopped.
func (h *hedger) run() {
	defer close(h.exit)
	h.timer = h.r.clock.NewTimer(time.Hour)
	defer h.timer.Stop()
	for {
		h.timer.Stop()
		if next := h.fireDue(); next >= 0 {
			h.timer.Reset(time.Duration(next - h.r.now()))
		}
		select {
		case <-h.stop:
			return
		case <-h.wake:
		case <-h.timer.C():
		}
	}
}

// fireDue queues the attempts due by now and returns when the next one is due, or -1 if none.
func (h *hedger) fireDue() (next int64) {
	var fire []hedgeDue
	h.mu.Lock()
	now := h.r.now()
	for len(h.due) > 0 && h.due[0].at <= now {
		fire = append(fire, heap.Pop(&h.due).(hedgeDue))
	}
	next = -1
	if len(h.due) > 0 {
		next = h.due[0].at
	}
	h.mu.Unlock()
	for _, d := range fire {
		h.r.flights.queueHedge(d.f, d.n)
	}
	return next
}

// shutdown stops the hedger and waits for it; the attempts still due are dropped: every call
// has settled by then.
func (h *hedger) shutdown() {
	close(h.stop)
	if h.started {
		<-h.exit
	}
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
