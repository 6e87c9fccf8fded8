package reactor_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestStreamMemoryFlat: a server pushing as fast as it can against a host that ticks once a
// second (for 5 s of wall time) holds the process's memory and goroutines flat: what
// the stream keeps is bounded by MaxWaiting messages and HTTP/2's window, not by what the
// server would send. Skipped with -short.
//
// The bounds asserted, with a window fixed by the dial options (no BDP estimation):
//   - The server sends at most what Tick delivered, plus the ring (MaxWaiting), the message
//     the receiver is reading, and two windows of messages (the client's receive window and
//     the server's write quota), with a few messages of slack for frames in flight. A stream
//     that read ahead of the ring would let the server send thousands of messages per tick.
//   - HeapInuse after a GC, sampled at every tick, never exceeds the first sample (the ring
//     already full) by more than heapSlack. What the stream may hold is about
//     (MaxWaiting + 1) × payload + 2 × window ≈ 0.4 MiB; an unbounded stream grows with
//     all the server sends between two ticks, many times heapSlack in a second of a server
//     pushing flat out; heapSlack sits between, with room for the allocator's and the race
//     detector's noise.
//   - The goroutine count, sampled at every tick, stays within goroutineSlack of the first
//     sample: a stream uses a fixed set of goroutines, whatever it receives.
func TestStreamMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("ticks for 5 s of wall time")
	}
	const (
		maxWaiting     = 16
		payload        = 16 << 10
		window         = 64 << 10
		tickEvery      = time.Second
		ticks          = 5
		heapSlack      = 4 << 20
		goroutineSlack = 2
		slackMessages  = 4
	)
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{DialOptions: []grpc.DialOption{
		grpc.WithInitialWindowSize(window), grpc.WithInitialConnWindowSize(window)}})
	var l streamLog
	s := reactor.Watch(r, watch, &testpb.WatchRequest{Forever: true, Message: "m", PayloadBytes: payload},
		&calls.StreamOptions{MaxWaiting: maxWaiting}, l.watchHandler())
	// Running: the ring fills before the first tick.
	require.Eventually(t, func() bool { return srv.StreamSent() >= maxWaiting }, bound, poll)

	var heap0 uint64
	var g0 int
	ticker := time.NewTicker(tickEvery)
	defer ticker.Stop()
	for i := range ticks {
		<-ticker.C // the host ticks rarely; between ticks it does not read Ready
		r.Tick(time.Second)
		sent := srv.StreamSent()
		limit := int64(len(l.msgs) + maxWaiting + 1 + 2*window/payload + slackMessages)
		require.LessOrEqual(t, sent, limit, "tick %d: the server sent %d, %d delivered", i, sent, len(l.msgs))

		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		g := runtime.NumGoroutine()
		if i == 0 {
			heap0, g0 = ms.HeapInuse, g
			continue
		}
		require.LessOrEqual(t, ms.HeapInuse, heap0+heapSlack, "tick %d: heap in use grew from %d", i, heap0)
		require.LessOrEqual(t, g, g0+goroutineSlack, "tick %d: goroutines grew from %d", i, g0)
		t.Logf("tick %d: %d delivered, %d sent, heap in use %+d bytes, goroutines %+d", i, len(l.msgs), sent, int64(ms.HeapInuse)-int64(heap0), g-g0)
	}
	require.GreaterOrEqual(t, len(l.msgs), ticks*maxWaiting, "each tick delivered a full ring")
	s.Cancel()
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	l.checkInOrder(t, "m")
	require.ErrorIs(t, l.err, calls.ErrCancelled)
}
