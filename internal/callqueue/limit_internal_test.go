package callqueue

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAIMD checks the limit's moves: one backoff per window of calls in flight, growth by one
// per window of successes while the lanes are half used, within the floor and the max.
func TestAIMD(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial int
		run     func(a *aimd, take func() *Slot)
		want    int
	}{
		{"drops of calls in flight together: one backoff", 8, func(a *aimd, take func() *Slot) {
			var s []*Slot
			for range 8 {
				s = append(s, take())
			}
			for _, x := range s {
				x.Signal = Drop
				a.release(x)
			}
		}, 4},
		{"a drop after the backoff: another", 8, func(a *aimd, take func() *Slot) {
			x, y := take(), take()
			x.Signal, y.Signal = Drop, Drop
			a.release(x)
			z := take()
			a.release(y) // in flight at the backoff: not counted
			z.Signal = Drop
			a.release(z)
		}, 2},
		{"never below the floor", 3, func(a *aimd, take func() *Slot) {
			for range 5 {
				x := take()
				x.Signal = Drop
				a.release(x)
			}
		}, 2},
		{"one window of successes, the lanes full: one step", 4, func(a *aimd, take func() *Slot) {
			var s []*Slot
			for range 4 {
				s = append(s, take())
			}
			for range 4 { // each success's lane takes the next call: the lanes stay full
				s[0].Signal = Success
				a.release(s[0])
				s = append(s[1:], take())
			}
			for _, x := range s {
				a.release(x)
			}
		}, 5},
		{"successes with the lanes under half used: none", 4, func(a *aimd, take func() *Slot) {
			for range 10 {
				x := take()
				x.Signal = Success
				a.release(x)
			}
		}, 4},
		{"never above the max", 8, func(a *aimd, take func() *Slot) {
			for range 20 {
				x := take()
				x.Signal = Success
				a.release(x)
			}
		}, 8},
		{"neutral: no move", 4, func(a *aimd, take func() *Slot) {
			a.release(take())
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &aimd{cfg: LimitConfig{Floor: 2, Max: 8, Initial: tc.initial, Backoff: 0.5}, limit: tc.initial}
			tc.run(a, func() *Slot {
				s := &Slot{}
				a.take(s)
				return s
			})
			require.Equal(t, tc.want, a.limit)
			require.Zero(t, a.running)
		})
	}
}

// TestReadyQueueGate checks that a take waits for a place under the limit, that the next take
// gives the last one back, and that a closed queue ignores the limit.
func TestReadyQueueGate(t *testing.T) {
	q := NewReadyQueue(&LimitConfig{Floor: 1, Max: 4, Initial: 1, Backoff: 0.5})
	q.Push(make([]Work, 3), 0)
	var a, b Slot
	_, ok := q.TryTake(&a)
	require.True(t, ok)
	_, ok = q.TryTake(&b)
	require.False(t, ok, "a second call started over the limit of 1")
	a.Signal = Neutral
	_, ok = q.TryTake(&a) // gives the place back, takes it again
	require.True(t, ok)
	q.Close()
	_, ok = q.TryTake(&b)
	require.True(t, ok, "a closed queue kept a call behind the limit")
	limit, running := q.Limit()
	require.Equal(t, 1, limit)
	require.Equal(t, 2, running)
}
