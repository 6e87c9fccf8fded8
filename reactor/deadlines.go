package reactor

import (
	"iter"
	"sync/atomic"

	"github.com/trixnew/prpc/internal/callcore"
)

// deadlineHeap holds calls by deadline: a queue of the calls pushed in deadline order, as
// calls with one timeout are, in O(1) per call, and a binary min-heap of the others. Its
// entries are the reactor goroutine's alone; its count of unsettled calls is shared with the
// invoker lanes, which settle most calls.
//
// A call settled before its deadline leaves the heap lazily: its entry stays, dead (the call
// is no longer unsettled), until it reaches the top or until dead entries outnumber live ones,
// when the heap is compacted in O(n). Eager removal from the middle of a large heap costs
// O(log n) cache-missing compares per settled call, paid by the reactor goroutine for nearly
// every call in a burst; lazily, a removal costs O(1) amortised. The reactor goroutine prunes
// on each of its turns, and lanes wake it every compactAfter settlements, so the heap holds
// at most about twice the live calls or compactAfter dead entries, whichever is more, plus
// the up to compactAfter calls lanes settled since its last turn. Records are reused, so each
// entry keeps the generation of the use it is for, and its deadline beside the record, so
// that compares touch only the heap and a later use of the record leaves the entry dead.
type deadlineHeap struct {
	// inOrder[first:] are the entries pushed at a deadline no earlier than the previous
	// one's: in deadline order, so its earliest is its first. inOrder[:first] are cleared.
	inOrder []deadlineEntry
	first   int
	// h is a binary min-heap of the entries pushed out of order.
	h []deadlineEntry
	// unsettled counts the calls pushed and not yet settled: the reactor goroutine counts its
	// own settlements in remove, and lanes theirs in settledByLane, just after their
	// compare-and-swap. It is never below the number of live entries, so when it reaches
	// zero every entry is dead.
	unsettled atomic.Int64
}

type deadlineEntry struct {
	at  int64 // the call's Deadline
	c   *callcore.Call
	gen uint32 // the use of c the entry is for: a later use of the record makes it dead
}

// compactAfter is the number of dead entries below which the heap is never compacted.
const compactAfter = 256

// live returns the number of unsettled calls in the heap (an upper bound while a lane is
// between its settlement and its count).
func (h *deadlineHeap) live() int { return int(h.unsettled.Load()) }

// len returns the number of entries, live and dead.
func (h *deadlineHeap) len() int { return len(h.inOrder) - h.first + len(h.h) }

// all yields every entry, live and dead, in no particular order.
func (h *deadlineHeap) all() iter.Seq[deadlineEntry] {
	return func(yield func(deadlineEntry) bool) {
		for _, e := range h.inOrder[h.first:] {
			if !yield(e) {
				return
			}
		}
		for _, e := range h.h {
			if !yield(e) {
				return
			}
		}
	}
}

// push adds c, which must be unsettled and not in the heap, at its deadline: to the queue in
// order if no entry there has a later deadline, to the min-heap otherwise.
func (h *deadlineHeap) push(c *callcore.Call, gen uint32) {
	c.InHeap = true
	h.unsettled.Add(1)
	e := deadlineEntry{at: c.Deadline, c: c, gen: gen}
	if n := len(h.inOrder); n == h.first || e.at >= h.inOrder[n-1].at {
		h.pushInOrder(e)
		return
	}
	h.h = append(h.h, e)
	h.up(len(h.h) - 1)
}

// pushInOrder appends e to the queue in order. Once the cleared front is at least half of a
// full queue, it moves the rest to the front rather than grow: each entry moves at most
// once per entry cleared before it.
func (h *deadlineHeap) pushInOrder(e deadlineEntry) {
	if len(h.inOrder) == cap(h.inOrder) && h.first > 0 && h.first >= len(h.inOrder)/2 {
		n := copy(h.inOrder, h.inOrder[h.first:])
		clear(h.inOrder[n:])
		h.inOrder, h.first = h.inOrder[:n], 0
	}
	h.inOrder = append(h.inOrder, e)
}

// remove counts c, settled by the reactor goroutine, out of the heap if it is there. Its
// entry goes at the next prune, like those of calls lanes settled.
func (h *deadlineHeap) remove(c *callcore.Call) {
	if !c.InHeap {
		return
	}
	c.InHeap = false
	h.unsettled.Add(-1)
}

// settledByLane counts out a call in the heap that an invoker lane settled, and returns the
// number of unsettled calls left. Any goroutine may call it.
func (h *deadlineHeap) settledByLane() int64 { return h.unsettled.Add(-1) }

// prune drops every entry once none is live, so that no call outlives its use, and
// compacts the heap once dead entries are many and outnumber live ones. The reactor
// goroutine prunes once per turn.
func (h *deadlineHeap) prune() {
	live := h.live()
	dead := h.len() - live // at most the true number of dead entries
	switch {
	case h.len() == 0:
	case live == 0:
		clear(h.inOrder)
		h.inOrder, h.first = h.inOrder[:0], 0
		clear(h.h)
		h.h = h.h[:0]
	case dead >= compactAfter && dead > live:
		h.compact()
	}
}

// earliest returns the entry of the unsettled call with the earliest deadline, and false if
// there is none. It drops the dead entries it finds in front.
func (h *deadlineHeap) earliest() (deadlineEntry, bool) {
	for h.first < len(h.inOrder) && !h.inOrder[h.first].c.Unsettled(h.inOrder[h.first].gen) {
		h.inOrder[h.first] = deadlineEntry{}
		h.first++
	}
	if h.first == len(h.inOrder) {
		h.inOrder, h.first = h.inOrder[:0], 0
	}
	for len(h.h) > 0 && !h.h[0].c.Unsettled(h.h[0].gen) {
		h.pop()
	}
	switch {
	case h.first < len(h.inOrder) && (len(h.h) == 0 || h.inOrder[h.first].at <= h.h[0].at):
		return h.inOrder[h.first], true
	case len(h.h) > 0:
		return h.h[0], true
	}
	return deadlineEntry{}, false
}

// pop removes the top entry.
func (h *deadlineHeap) pop() {
	last := len(h.h) - 1
	h.h[0] = h.h[last]
	h.h[last] = deadlineEntry{}
	h.h = h.h[:last]
	if last > 0 {
		h.down(0)
	}
}

// compact drops the dead entries, keeping the queue's order, and restores the heap order.
func (h *deadlineHeap) compact() {
	inOrder := h.inOrder[:0]
	for _, e := range h.inOrder[h.first:] {
		if e.c.Unsettled(e.gen) {
			inOrder = append(inOrder, e)
		}
	}
	clear(h.inOrder[len(inOrder):])
	h.inOrder, h.first = inOrder, 0
	kept := h.h[:0]
	for _, e := range h.h {
		if e.c.Unsettled(e.gen) {
			kept = append(kept, e)
		}
	}
	clear(h.h[len(kept):])
	h.h = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *deadlineHeap) up(i int) {
	s := h.h
	for i > 0 {
		parent := (i - 1) / 2
		if s[i].at >= s[parent].at {
			return
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *deadlineHeap) down(i int) {
	s := h.h
	n := len(s)
	for {
		small := i
		if l := 2*i + 1; l < n && s[l].at < s[small].at {
			small = l
		}
		if r := 2*i + 2; r < n && s[r].at < s[small].at {
			small = r
		}
		if small == i {
			return
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
}
