package reactor

import (
	"time"

	"github.com/trixnew/prpc/internal/callcore"
)

// deadlineHeap is a binary min-heap of the unsettled calls by deadline, owned by the reactor
// goroutine. Each call keeps its index (HeapIndex, -1 when absent) so that a call settled
// early leaves the heap in O(log n).
type deadlineHeap []*callcore.Call

func (h deadlineHeap) less(i, j int) bool { return h[i].Deadline.Before(h[j].Deadline) }

func (h deadlineHeap) swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].HeapIndex = i
	h[j].HeapIndex = j
}

func (h *deadlineHeap) push(c *callcore.Call) {
	c.HeapIndex = len(*h)
	*h = append(*h, c)
	h.up(c.HeapIndex)
}

// earliest returns the earliest deadline; the heap must not be empty.
func (h deadlineHeap) earliest() time.Time { return h[0].Deadline }

// remove takes c out of the heap if it is there.
func (h *deadlineHeap) remove(c *callcore.Call) {
	i := c.HeapIndex
	if i < 0 || i >= len(*h) || (*h)[i] != c {
		return
	}
	last := len(*h) - 1
	if i != last {
		h.swap(i, last)
	}
	(*h)[last] = nil
	*h = (*h)[:last]
	c.HeapIndex = -1
	if i != last {
		h.down(i)
		h.up(i)
	}
}

func (h deadlineHeap) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if !h.less(i, parent) {
			return
		}
		h.swap(i, parent)
		i = parent
	}
}

func (h deadlineHeap) down(i int) {
	n := len(h)
	for {
		small := i
		if l := 2*i + 1; l < n && h.less(l, small) {
			small = l
		}
		if r := 2*i + 2; r < n && h.less(r, small) {
			small = r
		}
		if small == i {
			return
		}
		h.swap(i, small)
		i = small
	}
}

// fifo is a growable ring of calls waiting for an invoker slot.
type fifo struct {
	buf        []*callcore.Call
	head, size int
}

func (f *fifo) len() int { return f.size }

func (f *fifo) push(c *callcore.Call) {
	if f.size == len(f.buf) {
		n := max(16, 2*len(f.buf))
		buf := make([]*callcore.Call, n)
		for i := 0; i < f.size; i++ {
			buf[i] = f.buf[(f.head+i)%len(f.buf)]
		}
		f.buf, f.head = buf, 0
	}
	f.buf[(f.head+f.size)%len(f.buf)] = c
	f.size++
}

func (f *fifo) pop() *callcore.Call {
	c := f.buf[f.head]
	f.buf[f.head] = nil
	f.head = (f.head + 1) % len(f.buf)
	f.size--
	return c
}
