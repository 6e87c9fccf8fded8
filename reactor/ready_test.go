package reactor_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

func TestReadyAndOnReadyCoalesceWakeUps(t *testing.T) {
	var (
		h          atomic.Pointer[host]
		onReady    atomic.Int64
		onTickGoro atomic.Int64 // OnReady calls made on the goroutine inside Tick
		notified   = make(chan struct{}, 16)
	)
	r, g, loop := startGated(t, reactor.Config{Workers: 1, BatchSize: 5, OnReady: func() {
		if h.Load().onHost() {
			onTickGoro.Add(1)
		}
		onReady.Add(1)
		select {
		case notified <- struct{}{}:
		default: // more calls than the test expects; the counts catch it
		}
	}})
	h.Store(loop)
	waitNotified := func(want int64) {
		t.Helper()
		recv(t, notified, "an OnReady call")
		require.Equal(t, want, onReady.Load())
	}

	// Five completions, each in its own reactor turn, before any Tick: one wake-up.
	var delivered []string
	msgs := []string{"1", "2", "3", "4", "5"}
	settleInOrder(t, r, g, func(m string) { delivered = append(delivered, m) }, msgs, msgs)
	require.Equal(t, int64(1), onReady.Load(), "OnReady called once for a batch of completions")
	waitNotified(1)
	require.True(t, readySignalled(r))
	require.False(t, readySignalled(r), "Ready holds one value")

	// A budget-limited Tick leaves four behind: Ready and OnReady again.
	rep := h.Load().Tick(0)
	require.Equal(t, 4, rep.Remaining)
	require.True(t, readySignalled(r))
	waitNotified(2)

	// Draining them all wakes nobody; the next completion wakes the host once more.
	rep = h.Load().Tick(time.Second)
	require.Equal(t, reactor.TickReport{Delivered: 4, Elapsed: rep.Elapsed}, rep)
	require.Equal(t, msgs, delivered)
	require.False(t, readySignalled(r))
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "6"}, nil)
	waitNotified(3)
	require.True(t, readySignalled(r))
	require.Zero(t, onTickGoro.Load(), "OnReady ran on the goroutine inside Tick")
	require.Empty(t, notified, "OnReady called more often than asserted")
}

// TestReadyIsNeverLost checks that no wake-up is lost to a host that ticks in a busy loop:
// such a host can take a completion after the reactor queued it but before the reactor
// signalled it; the signal then arrives for calls already delivered, and the idle Tick it
// causes must still re-arm Ready, or no later completion wakes the host again. Each round
// ticks one call home in a busy loop, then waits for the next only on Ready. The interleaving
// is a race, so the test runs many rounds, within a time limit.
func TestReadyIsNeverLost(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	const rounds, maxTime = 1000, 3 * time.Second
	begin := time.Now()
	for i := 0; i < rounds && time.Since(begin) < maxTime; i++ {
		var busy, woken bool
		reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { busy = true })
		spin := time.Now()
		for !busy {
			r.Tick(0)
			if time.Since(spin) > bound {
				t.Fatalf("round %d: call not delivered within %v", i, bound)
			}
		}
		reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { woken = true })
		deadline := time.NewTimer(bound)
		for !woken {
			select {
			case <-r.Ready():
				r.Tick(time.Second)
			case <-deadline.C:
				t.Fatalf("round %d: completion never signalled on Ready: %+v", i, r.Stats())
			}
		}
		deadline.Stop()
	}
}

// TestReadyWakeupNotLost drives many instant completions through a host that ticks only when
// Ready fires, while another goroutine submits. A Tick that finds nothing to deliver after a
// spurious wake-up (completions pushed before the previous Tick took them, the flag set just
// after) must not leave the wake-up flag set, or Ready never fires again and the host waits
// forever. The interleaving is a race, so this test repeats it.
func TestReadyWakeupNotLost(t *testing.T) {
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{Workers: 4, BatchSize: 8})
	for round := range 5 {
		const n = 4000
		var delivered atomic.Int64
		submitted := make(chan struct{})
		go func() {
			defer close(submitted)
			for range n {
				reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { delivered.Add(1) })
			}
		}()
		bound := time.NewTimer(10 * time.Second)
		for delivered.Load() < n {
			select {
			case <-r.Ready():
				r.Tick(time.Second)
			case <-bound.C:
				t.Fatalf("round %d: Ready stopped firing with %d of %d calls delivered, %d pending",
					round, delivered.Load(), n, r.Stats().Pending)
			}
		}
		bound.Stop()
		<-submitted
	}
}
