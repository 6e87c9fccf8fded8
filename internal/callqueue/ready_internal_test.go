package callqueue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
)

// TestReadyQueueOrder checks the order lanes take calls in: critical first, each class in
// submission order while the queue drains, newest first once it has not been empty for
// StandingAfter (adaptive LIFO), and in submission order again once a take empties it.
func TestReadyQueueOrder(t *testing.T) {
	recs := make([]*callcore.Call, 8)
	for i := range recs {
		recs[i] = new(callcore.Call)
	}
	work := func(i int, critical bool) Work { return Work{C: recs[i], Critical: critical} }
	const ms = int64(1e6)
	cases := []struct {
		name   string
		pushes [][]Work
		at     []int64 // each push's time
		want   []int   // the records taken, in order
	}{
		{name: "submission order", pushes: [][]Work{{work(0, false), work(1, false)}, {work(2, false)}},
			at: []int64{0, StandingAfter - 1}, want: []int{0, 1, 2}},
		{name: "critical first", pushes: [][]Work{{work(0, false), work(1, true)}, {work(2, true)}},
			at: []int64{0, ms}, want: []int{1, 2, 0}},
		{name: "standing: newest first", pushes: [][]Work{{work(0, false), work(1, false)}, {work(2, false), work(3, false)}},
			at: []int64{0, StandingAfter}, want: []int{3, 2, 1, 0}},
		{name: "standing: critical first, newest first", pushes: [][]Work{{work(0, true), work(1, false)}, {work(2, true), work(3, false)}},
			at: []int64{ms, ms + StandingAfter}, want: []int{2, 0, 3, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := NewReadyQueue(nil)
			for i, p := range tc.pushes {
				q.Push(p, tc.at[i])
			}
			var got []int
			for range tc.want {
				w, ok := q.TryTake(&Slot{})
				require.True(t, ok)
				for i, r := range recs {
					if w.C == r {
						got = append(got, i)
					}
				}
			}
			require.Equal(t, tc.want, got)
			require.False(t, q.Standing(), "an empty queue does not stand")
		})
	}
}

// TestReadyQueueStandsUntilEmpty checks that a standing queue stands until a take empties it,
// whatever the time of later pushes, and that the next push starts the count again.
func TestReadyQueueStandsUntilEmpty(t *testing.T) {
	q := NewReadyQueue(nil)
	rec := func() Work { return Work{C: new(callcore.Call)} }
	q.Push([]Work{rec(), rec()}, 10)
	require.False(t, q.Standing())
	q.Push([]Work{rec()}, 10+StandingAfter)
	require.True(t, q.Standing())
	for range 2 {
		_, ok := q.TryTake(&Slot{})
		require.True(t, ok)
		require.True(t, q.Standing(), "not empty yet")
	}
	_, ok := q.TryTake(&Slot{})
	require.True(t, ok)
	require.False(t, q.Standing(), "emptied")
	q.Push([]Work{rec()}, 20+StandingAfter)
	q.Push([]Work{rec()}, 20+2*StandingAfter-1)
	require.False(t, q.Standing(), "non-empty for less than StandingAfter since it was empty")
	q.Push([]Work{rec()}, 20+2*StandingAfter)
	require.True(t, q.Standing())
}
