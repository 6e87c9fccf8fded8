package reactor

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/testpb"
)

// TestOnReadySkipsDrainedWakeUps checks that a wake-up whose calls a Tick took before the
// notifier goroutine got to call OnReady makes no call of it, and that no wake-up is lost:
// a Tick that leaves calls behind, and calls that settle later, call OnReady again.
//
// OnReady blocks in its first call, so that the notifier holds the wake-up of the second
// batch while the host ticks; then OnReady returns, and the notifier handles that wake-up.
func TestOnReadySkipsDrainedWakeUps(t *testing.T) {
	cases := []struct {
		name   string
		batch  int           // calls in the second batch, settled while OnReady blocks
		budget time.Duration // the Tick that takes the second batch
		left   int           // calls that Tick leaves: OnReady announces them
	}{
		{"drained", 1, time.Minute, 0},
		{"drained, a batch of three", 3, time.Minute, 0},
		{"leftovers", 2, 0, 1}, // a budget ≤ 0 delivers exactly one
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var onReadys atomic.Int32
			entered := make(chan struct{}, 8) // a value as each call of OnReady starts
			release := make(chan struct{})
			var once sync.Once
			unblock := func() { once.Do(func() { close(release) }) }
			t.Cleanup(unblock)
			r, err := New(Config{Conn: answerConn{}, OnReady: func() {
				entered <- struct{}{}
				if onReadys.Add(1) == 1 {
					<-release
				}
			}})
			require.NoError(t, err)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), waitBound)
				defer cancel()
				require.NoError(t, r.Close(ctx))
			})
			delivered := 0
			submit := func(n int) {
				for range n {
					Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { delivered++ })
				}
			}
			tick := func(budget time.Duration) int { return r.Tick(budget).Delivered }

			// The first batch: its wake-up calls OnReady, which blocks; the host takes its
			// call anyway, on Ready.
			submit(1)
			receive(t, entered, "OnReady for the first batch")
			receive(t, r.Ready(), "Ready for the first batch")
			require.Equal(t, 1, tick(time.Minute))

			// The second batch settles while OnReady blocks: its wake-up waits in the
			// notifier's kicks, and the host takes the batch on Ready.
			submit(tc.batch)
			require.Eventually(t, func() bool {
				return r.out.Len() == tc.batch && len(r.notify.kicks) == 1
			}, waitBound, time.Millisecond, "the second batch and its wake-up")
			receive(t, r.Ready(), "Ready for the second batch")
			require.Equal(t, tc.batch-tc.left, tick(tc.budget))

			// OnReady returns, and the notifier takes the second batch's wake-up: a call if
			// the Tick left calls (it re-armed), none if it drained them.
			unblock()
			if tc.left > 0 {
				receive(t, entered, "OnReady for the calls the Tick left")
				require.Equal(t, tc.left, tick(time.Minute))
			}
			settleNotifier(r)
			want := int32(1 + min(tc.left, 1))
			require.Equal(t, want, onReadys.Load(), "calls of OnReady")

			// A later batch still wakes the host, with one call, however many kicks the
			// notifier takes before the host ticks.
			submit(1)
			receive(t, entered, "OnReady for a later batch")
			settleNotifier(r)
			require.Equal(t, want+1, onReadys.Load(), "calls of OnReady")
			require.Equal(t, 1, tick(time.Minute))
			settleNotifier(r)
			require.Equal(t, want+1, onReadys.Load(), "calls of OnReady")
			require.Equal(t, 1+tc.batch+1, delivered)
		})
	}
}

// settleNotifier returns once r's notifier goroutine has handled every kick sent before the
// call, with no call of OnReady still running for them (OnReady must not block). It sends
// three kicks of its own, each a late kick of a wake-up that needs no call of OnReady (the
// caller makes sure of that: a Tick has taken its calls, or a call of OnReady announced
// them). The kicks channel has room for one, so the third send completes only once the
// notifier has taken the second, which it does only after it has finished with every kick
// before the first.
func settleNotifier(r *Reactor) {
	for range 3 {
		r.notify.kicks <- struct{}{}
	}
}

// waitBound bounds the waits of the internal wake-up tests: no wake-up or call on loopback,
// even under -race on a busy machine, comes near it.
const waitBound = 10 * time.Second

// receive receives from ch, failing the test, naming what, after waitBound.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(waitBound):
		t.Fatalf("%s: nothing received within %v", what, waitBound)
		panic("unreachable")
	}
}
