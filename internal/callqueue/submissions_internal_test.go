package callqueue

import (
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// push submits one call whose submitted field is v, and reports whether the consumer took it.
func pushValue(q *SubmissionRing, v int64) bool {
	s, pos, ok := q.Reserve()
	if !ok {
		return false
	}
	s.Submitted = v
	return q.Publish(s, pos)
}

func TestSubmissionRingOrder(t *testing.T) {
	q := NewSubmissionRing(5, make(chan struct{}, 1))
	require.Len(t, q.slots, 8, "rounded up to a power of two")
	var out Submission
	for lap := range 3 { // past the end of the slots, three times
		for i := range 8 {
			require.True(t, pushValue(q, int64(lap*8+i)))
		}
		require.True(t, q.Ready())
		for i := range 8 {
			pos, ok := q.Take(&out)
			require.True(t, ok)
			require.Equal(t, uint64(lap*8+i), pos, "its position")
			require.Equal(t, int64(lap*8+i), out.Submitted)
		}
		_, ok := q.Take(&out)
		require.False(t, ok)
		require.False(t, q.Ready())
	}
}

// Producers on many goroutines and the consumer at once: every submission is taken exactly
// once, and each producer's in the order it published them.
func TestSubmissionRingConcurrent(t *testing.T) {
	const producers, each = 8, 2000
	q := NewSubmissionRing(64, make(chan struct{}, 1))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 64) // admission: at most 64 published and not taken
	var refused atomic.Int64       // submissions the ring refused: the consumer waits for none of them
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				sem <- struct{}{}
				if !pushValue(q, int64(p*each+i)) {
					t.Errorf("producer %d: submission %d refused by an open ring", p, i) // not Fatal: off the test goroutine
					refused.Add(1)
					<-sem
				}
			}
		})
	}
	next := make([]int, producers)
	var out Submission
	for taken := 0; taken+int(refused.Load()) < producers*each; {
		if _, ok := q.Take(&out); !ok {
			continue
		}
		<-sem
		taken++
		p, i := int(out.Submitted)/each, int(out.Submitted)%each
		require.Equal(t, next[p], i, "producer %d's submissions in order", p)
		next[p]++
	}
	wg.Wait()
	require.False(t, q.Ready())
}

// A consumer that exits takes what is published; a producer that publishes after that takes
// its slot back: each submission is taken exactly once, by one side or the other.
func TestSubmissionRingClose(t *testing.T) {
	for round := range 200 {
		const producers, each = 4, 16
		q := NewSubmissionRing(producers*each, make(chan struct{}, 1))
		var mu sync.Mutex
		seen := map[int64]string{}
		note := func(v int64, by string) {
			mu.Lock()
			defer mu.Unlock()
			require.Empty(t, seen[v], "round %d: submission %d taken by %s and %s", round, v, seen[v], by)
			seen[v] = by
		}
		var wg sync.WaitGroup
		start := make(chan struct{})
		for p := range producers {
			wg.Go(func() {
				<-start
				for i := range each {
					v := int64(p*each + i)
					s, pos, ok := q.Reserve()
					if !ok {
						note(v, "its producer, refused")
						continue
					}
					s.Submitted = v
					if !q.Publish(s, pos) {
						note(v, "its producer")
					}
				}
			})
		}
		close(start)
		var out Submission
		for range round % 8 { // some taken while running
			if _, ok := q.Take(&out); ok {
				note(out.Submitted, "the consumer")
			}
		}
		q.Close(func(_ uint64, s *Submission) { note(s.Submitted, "the consumer's close") })
		wg.Wait()
		require.Len(t, seen, producers*each, "round %d: a submission was lost", round)
	}
}

// A producer wakes the consumer that said it sleeps, once.
func TestSubmissionRingWakes(t *testing.T) {
	wake := make(chan struct{}, 1)
	q := NewSubmissionRing(4, wake)
	require.True(t, pushValue(q, 1))
	require.Empty(t, wake, "no wake-up for a consumer that is not sleeping")
	q.sleeping.Store(true)
	require.True(t, pushValue(q, 2))
	require.Len(t, wake, 1)
	require.False(t, q.sleeping.Load())
	require.True(t, pushValue(q, 3))
	require.Len(t, wake, 1, "one wake-up per sleep")
}

// TestSubmissionSize keeps a submission slot at 80 bytes: the host writes one per call, so in
// a burst each byte of it is a byte of the ring the game loop's thread writes per call.
func TestSubmissionSize(t *testing.T) {
	if got, limit := unsafe.Sizeof(Submission{}), uintptr(80); got > limit {
		t.Errorf("a submission slot is %d bytes, over its budget of %d", got, limit)
	}
}
