package callqueue

import (
	"iter"
	"sync/atomic"

	"github.com/trixnew/prpc/internal/callcore"
)

// DeadlineHeap holds calls by deadline: a queue of the calls pushed in deadline order, as
// calls with one timeout are, in O(1) per call, and a binary min-heap of the others. Its
// entries are the reactor goroutine's alone; its count of unsettled calls is shared with the
// invoker lanes, which settle most calls.
//
// A call settled before its deadline leaves the heap lazily: its entry stays, dead (the call
// is no longer unsettled), until it reaches the top or until dead entries outnumber live ones,
// when the heap is compacted in O(n). Eager removal from the middle of a large heap costs
// O(log n) cache-missing compares per settled call, paid by the reactor goroutine for nearly
// every call in a burst; lazily, a removal costs O(1) amortised. The reactor goroutine prunes
// on each of its turns, and lanes wake it every CompactAfter settlements, so the heap holds
// at most about twice the live calls or CompactAfter dead entries, whichever is more, plus
// the up to CompactAfter calls lanes settled since its last turn. Records are reused, so each
// entry keeps the generation of the use it is for, and its deadline beside the record, so
// that compares touch only the heap and a later use of the record leaves the entry dead.
type DeadlineHeap struct {
	// inOrder[first:] are the entries pushed at a deadline no earlier than the previous
	// one's: in deadline order, so its earliest is its first. inOrder[:first] are cleared.
	inOrder []DeadlineEntry
	first   int
	// h is a binary min-heap of the entries pushed out of order.
	h []DeadlineEntry
	// unsettled counts the calls pushed and not yet settled: the reactor goroutine counts its
	// own settlements in Remove, and lanes theirs in SettledByLane, just after their
	// compare-and-swap. It is never below the number of live entries, so when it reaches
	// zero every entry is dead.
	unsettled atomic.Int64
}

// DeadlineEntry is one use of a record in the heap, with the deadline it was pushed at.
type DeadlineEntry struct {
	At  int64 // the call's Deadline
	C   *callcore.Call
	Gen uint32 // the use of c the entry is for: a later use of the record makes it dead
}

// CompactAfter is the number of dead entries below which the heap is never compacted.
const CompactAfter = 256

// Live returns the number of unsettled calls in the heap (an upper bound while a lane is
// between its settlement and its count).
func (h *DeadlineHeap) Live() int { return int(h.unsettled.Load()) }

// Len returns the number of entries, live and dead.
func (h *DeadlineHeap) Len() int { return len(h.inOrder) - h.first + len(h.h) }

// All yields every entry, live and dead, in no particular order.
func (h *DeadlineHeap) All() iter.Seq[DeadlineEntry] {
	return func(yield func(DeadlineEntry) bool) {
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

// Push adds c, which must be unsettled and not in the heap, at its deadline: to the queue in
// order if no entry there has a later deadline, to the min-heap otherwise.
func (h *DeadlineHeap) Push(c *callcore.Call, gen uint32) {
	c.InHeap = true
	h.unsettled.Add(1)
	e := DeadlineEntry{At: c.Deadline, C: c, Gen: gen}
	if n := len(h.inOrder); n == h.first || e.At >= h.inOrder[n-1].At {
		h.pushInOrder(e)
		return
	}
	h.h = append(h.h, e)
	h.up(len(h.h) - 1)
}

// pushInOrder appends e to the queue in order. Once the cleared front is at least half of a
// full queue, it moves the rest to the front rather than grow: each entry moves at most
// once per entry cleared before it.
func (h *DeadlineHeap) pushInOrder(e DeadlineEntry) {
	if len(h.inOrder) == cap(h.inOrder) && h.first > 0 && h.first >= len(h.inOrder)/2 {
		n := copy(h.inOrder, h.inOrder[h.first:])
		clear(h.inOrder[n:])
		h.inOrder, h.first = h.inOrder[:n], 0
	}
	h.inOrder = append(h.inOrder, e)
}

// Remove counts c, settled by the reactor goroutine, out of the heap if it is there. Its
// entry goes at the next prune, like those of calls lanes settled.
func (h *DeadlineHeap) Remove(c *callcore.Call) {
	if !c.InHeap {
		return
	}
	c.InHeap = false
	h.unsettled.Add(-1)
}

// SettledByLane counts out a call in the heap that an invoker lane settled, and returns the
// number of unsettled calls left. Any goroutine may call it.
func (h *DeadlineHeap) SettledByLane() int64 { return h.unsettled.Add(-1) }

// Prune drops every entry once none is live, so that no call outlives its use, and
// compacts the heap once dead entries are many and outnumber live ones. The reactor
// goroutine prunes once per turn.
func (h *DeadlineHeap) Prune() {
	live := h.Live()
	dead := h.Len() - live // at most the true number of dead entries
	switch {
	case h.Len() == 0:
	case live == 0:
		clear(h.inOrder)
		h.inOrder, h.first = h.inOrder[:0], 0
		clear(h.h)
		h.h = h.h[:0]
	case dead >= CompactAfter && dead > live:
		h.compact()
	}
}

// Earliest returns the entry of the unsettled call with the Earliest deadline, and false if
// there is none. It drops the dead entries it finds in front.
func (h *DeadlineHeap) Earliest() (DeadlineEntry, bool) {
	for h.first < len(h.inOrder) && !h.inOrder[h.first].C.Unsettled(h.inOrder[h.first].Gen) {
		h.inOrder[h.first] = DeadlineEntry{}
		h.first++
	}
	if h.first == len(h.inOrder) {
		h.inOrder, h.first = h.inOrder[:0], 0
	}
	for len(h.h) > 0 && !h.h[0].C.Unsettled(h.h[0].Gen) {
		h.Pop()
	}
	switch {
	case h.first < len(h.inOrder) && (len(h.h) == 0 || h.inOrder[h.first].At <= h.h[0].At):
		return h.inOrder[h.first], true
	case len(h.h) > 0:
		return h.h[0], true
	}
	return DeadlineEntry{}, false
}

// Pop removes the top entry.
func (h *DeadlineHeap) Pop() {
	last := len(h.h) - 1
	h.h[0] = h.h[last]
	h.h[last] = DeadlineEntry{}
	h.h = h.h[:last]
	if last > 0 {
		h.down(0)
	}
}

// compact drops the dead entries, keeping the queue's order, and restores the heap order.
func (h *DeadlineHeap) compact() {
	inOrder := h.inOrder[:0]
	for _, e := range h.inOrder[h.first:] {
		if e.C.Unsettled(e.Gen) {
			inOrder = append(inOrder, e)
		}
	}
	clear(h.inOrder[len(inOrder):])
	h.inOrder, h.first = inOrder, 0
	kept := h.h[:0]
	for _, e := range h.h {
		if e.C.Unsettled(e.Gen) {
			kept = append(kept, e)
		}
	}
	clear(h.h[len(kept):])
	h.h = kept
	for i := len(kept)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h *DeadlineHeap) up(i int) {
	s := h.h
	for i > 0 {
		parent := (i - 1) / 2
		if s[i].At >= s[parent].At {
			return
		}
		s[i], s[parent] = s[parent], s[i]
		i = parent
	}
}

func (h *DeadlineHeap) down(i int) {
	s := h.h
	n := len(s)
	for {
		small := i
		if l := 2*i + 1; l < n && s[l].At < s[small].At {
			small = l
		}
		if r := 2*i + 2; r < n && s[r].At < s[small].At {
			small = r
		}
		if small == i {
			return
		}
		s[i], s[small] = s[small], s[i]
		i = small
	}
}
