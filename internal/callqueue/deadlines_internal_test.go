package callqueue

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
)

// TestDeadlineHeapAgainstModel drives the lazy deadline heap with random pushes, settlements
// by the reactor and by lanes, and expiries, and checks, after every step, that it yields the
// same earliest call as a plain model, that it never holds more than about twice the live
// calls, and that it holds no call once none is live. Deadlines come in random order (the
// min-heap), in rising order (the queue in order: calls with one timeout), or rising with
// some out of order (both at once).
func TestDeadlineHeapAgainstModel(t *testing.T) {
	tests := []struct {
		name       string
		ops        int
		removeProb float64 // chance that a step removes a random live call rather than pushing
		order      string  // of the deadlines pushed: random, same, rising or mostly rising
	}{
		{"mostly pushes", 5000, 0.3, "random"},
		{"mostly removals, compactions", 20000, 0.7, "random"},
		{"equal deadlines", 3000, 0.5, "same"},
		{"burst then drain", 2 * CompactAfter * 4, 0.5, "random"},
		{"rising deadlines", 20000, 0.5, "rising"},
		{"rising, mostly pushes", 5000, 0.2, "rising"},
		{"mostly rising", 20000, 0.5, "mostly rising"},
		{"mostly rising, mostly removals", 20000, 0.7, "mostly rising"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, uint64(tt.ops)))
			var h DeadlineHeap
			var live []*callcore.Call // the model
			lagging := 0              // calls lanes settled and have not counted out yet
			check := func() {
				require.Equal(t, len(live)+lagging, h.Live())
				require.LessOrEqual(t, h.Len(), max(2*h.Live()+1, CompactAfter*2))
				got, ok := h.Earliest()
				if len(live) == 0 {
					require.False(t, ok)
					if lagging == 0 {
						require.Zero(t, h.Len(), "no entry may outlive the last live call")
						require.Empty(t, slices.Collect(h.All()))
					}
					return
				}
				minAt := slices.MinFunc(live, func(a, b *callcore.Call) int { return int(a.Deadline - b.Deadline) }).Deadline
				require.True(t, ok)
				require.True(t, got.C.Unsettled(got.Gen))
				require.Equal(t, minAt, got.At)
				require.Equal(t, minAt, got.C.Deadline)
			}
			settle := func(c *callcore.Call, byLane bool) {
				if byLane { // as a lane does, then the reactor's next turn; the count may lag
					require.True(t, c.Move(c.Gen(), callcore.Unclaimed, callcore.Completed))
					lagging++
					for ; lagging > 0 && rng.IntN(3) > 0; lagging-- {
						h.SettledByLane()
					}
					h.Prune()
					return
				}
				require.True(t, c.Move(c.Gen(), callcore.Unclaimed, callcore.Dropped))
				h.Remove(c)
				require.False(t, c.InHeap)
				h.Remove(c) // removing twice is a no-op
				h.Prune()   // as the engine does after every turn
			}
			for i := range tt.ops {
				switch {
				case len(live) > 0 && rng.Float64() < tt.removeProb:
					j := rng.IntN(len(live))
					settle(live[j], rng.IntN(2) == 0)
					live = slices.Delete(live, j, j+1)
				case len(live) > 0 && rng.IntN(10) == 0: // expire the earliest, as the engine does
					e, _ := h.Earliest()
					c := e.C
					settle(c, false)
					live = slices.DeleteFunc(live, func(x *callcore.Call) bool { return x == c })
				default:
					var at int64
					switch tt.order {
					case "random":
						at = rng.Int64N(1 << 20)
					case "same":
						at = 1
					case "rising":
						at = int64(i / 3) // some equal
					case "mostly rising":
						at = int64(i) - rng.Int64N(2)*rng.Int64N(50) // half of them up to 49 early
					}
					c := &callcore.Call{Deadline: at}
					h.Push(c, c.Gen())
					live = append(live, c)
				}
				check()
			}
			for len(live) > 0 { // drain
				settle(live[0], len(live)%2 == 0)
				live = live[1:]
				check()
			}
			for ; lagging > 0; lagging-- {
				h.SettledByLane()
			}
			h.Prune()
			check()
		})
	}
}
