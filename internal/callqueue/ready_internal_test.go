package callqueue

import (
	"slices"
	"sync"
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

// waiting returns how many lanes are blocked in q's Take.
func waiting(q *ReadyQueue) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.waiters
}

// startLanes starts n lanes that each take one call from q, with a slot of their own, and
// send what they took on the channel returned; it waits until all n block in Take, the queue
// being empty or the limit reached.
func startLanes(t *testing.T, q *ReadyQueue, n int) <-chan taken {
	t.Helper()
	out := make(chan taken, n)
	before := waiting(q)
	for range n {
		go func() {
			var s Slot
			w, ok := q.Take(&s)
			out <- taken{w, ok}
		}()
	}
	waitUntil(t, func() bool { return waiting(q) == before+n }, "every lane blocked in Take")
	return out
}

// taken is what a lane's Take returned.
type taken struct {
	w  Work
	ok bool
}

// TestReadyQueueClose checks that a closed queue still hands out every call it holds,
// critical first, over the limit too, and only then makes Take and TryTake return false.
func TestReadyQueueClose(t *testing.T) {
	recs := make([]*callcore.Call, 4)
	for i := range recs {
		recs[i] = new(callcore.Call)
	}
	cases := []struct {
		name     string
		limit    *LimitConfig
		critical []bool // the calls pushed, critical or not
		want     []int  // the calls taken after Close, in order
	}{
		{"empty", nil, nil, nil},
		{"calls left", nil, []bool{false, false}, []int{0, 1}},
		{"critical first", nil, []bool{false, true, false, true}, []int{1, 3, 0, 2}},
		{"over the limit", &LimitConfig{Floor: 1, Max: 1, Initial: 1, Backoff: 0.5}, []bool{false, false, false}, []int{0, 1, 2}},
	}
	for _, tc := range cases {
		for _, try := range []bool{false, true} {
			name := tc.name + ", Take"
			if try {
				name = tc.name + ", TryTake"
			}
			t.Run(name, func(t *testing.T) {
				q := NewReadyQueue(tc.limit)
				var ws []Work
				for i, critical := range tc.critical {
					ws = append(ws, Work{C: recs[i], Critical: critical})
				}
				q.Push(ws, 0)
				q.Close()
				require.Equal(t, len(tc.critical), q.Len())
				take := q.Take
				if try {
					take = q.TryTake
				}
				var got []int
				for {
					w, ok := take(new(Slot)) // slots kept: places stay held, as by lanes stuck in a hook
					if !ok {
						break
					}
					got = append(got, slices.Index(recs, w.C))
				}
				require.Equal(t, tc.want, got)
				require.Zero(t, q.Len())
				_, ok := q.Take(new(Slot))
				require.False(t, ok, "a closed, empty queue handed out a call")
			})
		}
	}
}

// TestReadyQueueWakesWaiters checks that a push wakes as many waiting lanes as it brings
// calls, each taking a call of its own, and that Close wakes every lane still waiting, which
// then returns false.
func TestReadyQueueWakesWaiters(t *testing.T) {
	cases := []struct {
		name         string
		lanes, calls int
	}{
		{"one call, four lanes", 4, 1},
		{"as many calls as lanes", 4, 4},
		{"more calls than lanes", 3, 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := NewReadyQueue(nil)
			lanes := startLanes(t, q, tc.lanes)
			ws := make([]Work, tc.calls)
			for i := range ws {
				ws[i] = Work{C: new(callcore.Call)}
			}
			q.Push(ws, 0)
			served := min(tc.lanes, tc.calls)
			seen := map[*callcore.Call]bool{}
			for range served {
				got := receive(t, lanes, "a lane woken by a push")
				require.True(t, got.ok)
				require.True(t, slices.ContainsFunc(ws, func(w Work) bool { return w.C == got.w.C }), "a call never pushed")
				require.False(t, seen[got.w.C], "a call taken twice")
				seen[got.w.C] = true
			}
			require.Equal(t, tc.calls-served, q.Len())
			waitUntil(t, func() bool { return waiting(q) == tc.lanes-served }, "the lanes left waiting")
			q.Close()
			for range tc.lanes - served {
				require.False(t, receive(t, lanes, "a lane woken by Close").ok)
			}
		})
	}
}

// TestReadyQueueGateWakesOnGrowth checks that a take whose release grew the limit wakes a
// lane that waits for a place, and only as many as the new places, and that Close lets the
// lane still waiting take its call over the limit.
func TestReadyQueueGateWakesOnGrowth(t *testing.T) {
	q := NewReadyQueue(&LimitConfig{Floor: 1, Max: 4, Initial: 1, Backoff: 0.5})
	q.Push([]Work{{C: new(callcore.Call)}}, 0)
	var mine Slot
	_, ok := q.TryTake(&mine)
	require.True(t, ok)
	lanes := startLanes(t, q, 2) // the queue is empty
	q.Push([]Work{{C: new(callcore.Call)}, {C: new(callcore.Call)}, {C: new(callcore.Call)}}, 0)
	require.Equal(t, 2, waiting(q), "a lane took a call with no place free")

	// A success with the lanes full grows the limit from 1 to 2: this take uses one place,
	// and wakes one lane for the other.
	mine.Signal = Success
	_, ok = q.TryTake(&mine)
	require.True(t, ok)
	require.True(t, receive(t, lanes, "a lane woken by the limit's growth").ok)
	limit, running := q.Limit()
	require.Equal(t, 2, limit)
	require.Equal(t, 2, running)
	waitUntil(t, func() bool { return waiting(q) == 1 }, "the other lane waiting still")
	require.Equal(t, 1, q.Len())

	q.Close()
	require.True(t, receive(t, lanes, "a lane woken by Close").ok, "the gate kept a call from a closed queue")
	require.Zero(t, q.Len())
}

// TestReadyQueueTryTake checks that TryTake returns at once when no call waits, having given
// back the place of the slot's previous call all the same.
func TestReadyQueueTryTake(t *testing.T) {
	for _, tc := range []struct {
		name  string
		limit *LimitConfig
	}{
		{"no limit", nil},
		{"a limit", &LimitConfig{Floor: 1, Max: 4, Initial: 2, Backoff: 0.5}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := NewReadyQueue(tc.limit)
			var s Slot
			_, ok := q.TryTake(&s)
			require.False(t, ok, "an empty queue handed out a call")
			q.Push([]Work{{C: new(callcore.Call)}}, 0)
			_, ok = q.TryTake(&s)
			require.True(t, ok)
			require.Equal(t, tc.limit != nil, s.Held(), "a place under the limit")
			_, ok = q.TryTake(&s)
			require.False(t, ok)
			require.False(t, s.Held(), "a take that found no call kept the slot's place")
			_, running := q.Limit()
			require.Zero(t, running)
		})
	}
}

// TestReadyQueueKeepsDroppedCalls checks that a call settled while it waits stays in the
// queue, counted by Len, until a lane takes it in its turn and finds it Dropped.
func TestReadyQueueKeepsDroppedCalls(t *testing.T) {
	q := NewReadyQueue(nil)
	ws := []Work{{C: new(callcore.Call)}, {C: new(callcore.Call)}, {C: new(callcore.Call)}}
	q.Push(ws, 0)
	dropped := ws[1]
	require.True(t, dropped.C.Move(dropped.Gen, callcore.Unclaimed, callcore.Dropped))
	require.Equal(t, 3, q.Len(), "a dropped call left the count")
	for i := range ws {
		w, ok := q.TryTake(&Slot{})
		require.True(t, ok)
		require.Equal(t, ws[i], w)
		require.Equal(t, len(ws)-i-1, q.Len())
	}
	claim, ok := dropped.C.Claim(dropped.Gen)
	require.True(t, ok)
	require.Equal(t, callcore.Dropped, claim, "the lane that takes it finds it dropped")
}

// TestReadyQueueConcurrentLanes runs lanes that take calls with an adaptive limit, reporting
// successes and drops, against a pusher of batches of critical and other calls, and then
// closes the queue: every call is taken exactly once, every lane exits, and its last take,
// which finds the queue closed and empty, gives back its place.
func TestReadyQueueConcurrentLanes(t *testing.T) {
	const lanes, pushes, batch = 8, 200, 10
	q := NewReadyQueue(&LimitConfig{Floor: 2, Max: 6, Initial: 4, Backoff: 0.5})
	var mu sync.Mutex
	seen := make(map[*callcore.Call]int, pushes*batch)
	var wg sync.WaitGroup
	for l := range lanes {
		wg.Go(func() {
			var s Slot
			for n := 0; ; n++ {
				w, ok := q.Take(&s)
				if !ok {
					return
				}
				mu.Lock()
				seen[w.C]++
				mu.Unlock()
				s.Signal = Signal((l + n) % 3) // neutral, success, drop
			}
		})
	}
	var all []*callcore.Call
	for i := range pushes {
		ws := make([]Work, batch)
		for j := range ws {
			ws[j] = Work{C: new(callcore.Call), Critical: j%3 == 0}
			all = append(all, ws[j].C)
		}
		q.Push(ws, int64(i)*StandingAfter/10) // the queue may stand: order is not checked here
	}
	q.Close()
	exited := make(chan struct{})
	go func() { wg.Wait(); close(exited) }()
	receive(t, exited, "every lane's exit")
	require.Zero(t, q.Len())
	require.Len(t, seen, len(all))
	for i, c := range all {
		require.Equal(t, 1, seen[c], "call %d taken %d times", i, seen[c])
	}
	limit, running := q.Limit()
	require.Zero(t, running, "places still held once every lane exited")
	require.GreaterOrEqual(t, limit, 2)
	require.LessOrEqual(t, limit, 6)
}
