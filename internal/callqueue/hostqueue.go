package callqueue

import (
	"sync/atomic"

	"github.com/trixnew/prpc/internal/callcore"
)

// HostQueue holds the calls whose callbacks must run at the next Tick without passing through
// another goroutine: calls that Call or Go rejected at submission (their promise, or for Go a
// callcore.Rejected that holds the callback and the error), and delivered calls that got new
// callbacks (their promise). Any goroutine pushes; only the Tick goroutine takes. Lanes never
// touch it, so a Tick never finds it held by a goroutine that lost its CPU, and it has no lock
// at all.
//
// It is a linked list, oldest first, with a node per push, and nodes are never reused, so a
// late write by a pusher can never land on a recycled node. A pusher publishes its node with
// one compare-and-swap on top, having linked it to the node below (older); only then does it
// link that node forward to its own (newer). Every push that has returned is therefore
// reachable from top through the older links, whatever the other pushers are doing; the
// forward links, which make taking the oldest call cheap, may lag for a moment behind a pusher
// that lost its CPU between its two steps, and the Tick then finds the next node from top.
type HostQueue struct {
	top    atomic.Pointer[HostNode] // the newest node; never nil
	pushed atomic.Int64             // pushes published
	// Owned by the Tick goroutine: the last node taken (at first a stub) and how many nodes
	// were taken.
	last  *HostNode
	taken int64
}

// HostNode is one push: a call's target (its promise, or the callback of a call Go rejected)
// and its links.
type HostNode struct {
	t     callcore.Target
	older *HostNode                // written before the node is published; cleared once taken
	newer atomic.Pointer[HostNode] // written by the pusher of the next node, after publishing it
}

// Init makes the queue empty; call it once, before any other method.
func (q *HostQueue) Init() {
	stub := new(HostNode)
	q.top.Store(stub)
	q.last = stub
}

// Push adds t. Safe from any goroutine; it never blocks.
func (q *HostQueue) Push(t callcore.Target) {
	n := &HostNode{t: t}
	for {
		t := q.top.Load()
		n.older = t
		if q.top.CompareAndSwap(t, n) {
			q.pushed.Add(1)
			t.newer.Store(n)
			return
		}
	}
}

// Idle reports whether nothing waits. Tick goroutine only.
func (q *HostQueue) Idle() bool { return q.top.Load() == q.last }

// Mark returns the newest node now: a Tick delivers up to it, and never the calls pushed by
// the callbacks it runs. Tick goroutine only.
func (q *HostQueue) Mark() *HostNode { return q.top.Load() }

// Waiting returns how many pushed calls have not been taken. Tick goroutine only.
func (q *HostQueue) Waiting() int { return int(q.pushed.Load() - q.taken) }

// Next takes the oldest call not yet taken, provided it is no newer than mark; it returns nil
// when the calls up to mark are all taken. Tick goroutine only.
func (q *HostQueue) Next(mark *HostNode) callcore.Target {
	if q.last == mark {
		return nil
	}
	n := q.last.newer.Load()
	if n == nil {
		// The pusher of the next node published it but has not linked it forward yet: find
		// it from mark, which is newer, through the older links.
		n = mark
		for n.older != q.last {
			n = n.older
		}
	}
	q.last.older = nil // nothing walks below the last node taken; let the GC have the rest
	q.last = n
	q.taken++
	t := n.t
	n.t = nil
	return t
}
