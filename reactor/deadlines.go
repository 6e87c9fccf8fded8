package reactor

import (
	"github.com/trixnew/prpc/internal/callcore"
)

// deadlineHeap is a binary min-heap of calls by deadline, owned by the reactor goroutine.
//
// A call settled before its deadline leaves the heap lazily: its entry stays, dead (the call's
// InHeap is false), until it reaches the top or until dead entries outnumber live ones, when
// the heap is compacted in O(n). Eager removal from the middle of a heap of 20,000 calls cost
// a quarter of the reactor goroutine's time in the extreme burst, in cache-missing compares;
// lazily, a removal costs O(1) amortised, and the heap holds at most about twice the live
// calls. Each entry keeps its deadline beside the call, so compares touch only the heap.
type deadlineHeap struct {
	h    []deadlineEntry
	dead int
}

type deadlineEntry struct {
	at int64 // the call's Deadline
	c  *callcore.Call
}

// compactAfter is the number of dead entries below which the heap is never compacted.
const compactAfter = 256

// live returns the number of calls in the heap.
func (h *deadlineHeap) live() int { return len(h.h) - h.dead }

// push adds c, which must not be in the heap, at its deadline.
func (h *deadlineHeap) push(c *callcore.Call) {
	c.InHeap = true
	h.h = append(h.h, deadlineEntry{at: c.Deadline, c: c})
	h.up(len(h.h) - 1)
}

// remove takes c out of the heap if it is there.
func (h *deadlineHeap) remove(c *callcore.Call) {
	if !c.InHeap {
		return
	}
	c.InHeap = false
	h.dead++
	switch {
	case h.dead == len(h.h): // none live: drop every entry now, so no call outlives its use
		clear(h.h)
		h.h, h.dead = h.h[:0], 0
	case h.dead >= compactAfter && 2*h.dead > len(h.h):
		h.compact()
	}
}

// earliest returns the live call with the earliest deadline, or nil if there is none.
func (h *deadlineHeap) earliest() *callcore.Call {
	for len(h.h) > 0 {
		if c := h.h[0].c; c.InHeap {
			return c
		}
		h.pop()
		h.dead--
	}
	return nil
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

// compact drops the dead entries and restores the heap order.
func (h *deadlineHeap) compact() {
	kept := h.h[:0]
	for _, e := range h.h {
		if e.c.InHeap {
			kept = append(kept, e)
		}
	}
	clear(h.h[len(kept):])
	h.h, h.dead = kept, 0
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
