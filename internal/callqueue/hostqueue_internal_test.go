package callqueue

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
)

// target is a stand-in promise: the queue only stores and returns it.
type target struct{ id int }

func (*target) Deliver(callcore.Host, *callcore.Call) {}

func newHostQueue() *HostQueue {
	q := new(HostQueue)
	q.Init()
	return q
}

// takeAll takes every call up to the current mark.
func takeAll(q *HostQueue) []callcore.Target {
	var out []callcore.Target
	mark := q.Mark()
	for c := q.Next(mark); c != nil; c = q.Next(mark) {
		out = append(out, c)
	}
	return out
}

func TestHostQueueOrderAndMark(t *testing.T) {
	q := newHostQueue()
	require.True(t, q.Idle())
	require.Nil(t, q.Next(q.Mark()))
	a, b, c := new(target), new(target), new(target)
	q.Push(a)
	q.Push(b)
	require.False(t, q.Idle())
	require.Equal(t, 2, q.Waiting())
	mark := q.Mark()
	q.Push(c) // after the mark: not taken by this round
	require.Same(t, a, q.Next(mark))
	require.Same(t, b, q.Next(mark))
	require.Nil(t, q.Next(mark))
	require.Equal(t, 1, q.Waiting())
	require.Equal(t, []callcore.Target{c}, takeAll(q))
	require.True(t, q.Idle())
	require.Zero(t, q.Waiting())
}

// TestHostQueueForwardLinkLag checks that a call whose pusher has published it but not yet
// linked the node below to it is still taken, in order: the Tick finds it from the top.
func TestHostQueueForwardLinkLag(t *testing.T) {
	q := newHostQueue()
	calls := make([]callcore.Target, 5)
	for i := range calls {
		calls[i] = &target{id: i}
		q.Push(calls[i])
	}
	// The pushers of the second and fourth nodes lost their CPU before their forward links.
	second := q.Mark().older.older.older
	second.older.newer.Store(nil)
	fourth := q.Mark().older
	fourth.older.newer.Store(nil)
	require.Equal(t, calls, takeAll(q))
	require.True(t, q.Idle())
}

// TestHostQueueConcurrentPushers checks that with many pushers racing, every call is taken
// exactly once, each pusher's calls in the order it pushed them, and nothing pushed before a
// mark is left behind by the round that uses it.
func TestHostQueueConcurrentPushers(t *testing.T) {
	const pushers, each = 8, 2000
	q := newHostQueue()
	owner := make(map[callcore.Target][2]int, pushers*each)
	all := make([][]callcore.Target, pushers)
	for p := range all {
		all[p] = make([]callcore.Target, each)
		for i := range all[p] {
			c := &target{id: p*each + i}
			all[p][i] = c
			owner[c] = [2]int{p, i}
		}
	}
	var wg sync.WaitGroup
	for p := range pushers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, c := range all[p] {
				q.Push(c)
			}
		}()
	}
	nextIndex := make([]int, pushers)
	seen := 0
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		for _, c := range takeAll(q) {
			o := owner[c]
			require.Equal(t, nextIndex[o[0]], o[1], "pusher %d's calls out of order", o[0])
			nextIndex[o[0]]++
			seen++
		}
	}
	require.Equal(t, pushers*each, seen)
	require.True(t, q.Idle())
}
