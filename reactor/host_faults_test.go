package reactor_test

// Faults of the host: it stops ticking; it closes during a burst.

import (
	"context"
	"errors"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestFaultHostStopsTicking: the host stops calling Tick while the backend keeps answering.
// Admission stops at MaxOutstanding (completed but undelivered calls still count), further
// calls fail at once with ErrOverloaded, and the heap grows only by those rejected calls' own
// records; once ticking resumes, every admitted call is delivered, in completion order, which
// the handler makes equal to submission order.
func TestFaultHostStopsTicking(t *testing.T) {
	if testing.Short() {
		t.Skip("submits 100,000 calls; skipped with -short")
	}
	leakCheck(t)
	const (
		maxOutstanding = 64 // = Workers × BatchSize: every admitted call is in flight at once
		rejectedN      = 100_000
	)
	srv := testserver.Start(t)
	gates := make([]chan struct{}, maxOutstanding)
	for i := range gates {
		gates[i] = make(chan struct{})
	}
	// The handler answers call i when the test opens gates[i]; the test opens them in
	// submission order, each once the previous call has completed in the reactor.
	srv.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		i, err := strconv.Atoi(req.GetMessage())
		if err != nil {
			return nil, status.Errorf(codes.InvalidArgument, "unexpected message %q", req.GetMessage())
		}
		select {
		case <-gates[i]:
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	h := startHost(t, reactor.Config{Target: srv.Addr(), Workers: 4, BatchSize: 16, MaxOutstanding: maxOutstanding, DefaultTimeout: 30 * time.Second, MaxTimeout: time.Minute})
	var admitted []*call
	for i := range maxOutstanding {
		c := h.submit(echo, echoReq(strconv.Itoa(i)), nil)
		require.False(t, c.rejected, "call %d within MaxOutstanding", i)
		admitted = append(admitted, c)
	}
	// From here on the host does not tick: waits poll the server and Stats only.
	require.Eventually(t, func() bool { return srv.Calls() == maxOutstanding }, bound, poll)

	// 100,000 more calls while every slot is taken: each fails at once, and what stays on the
	// heap is its promise (the call record), its error, and its slot in the queue for Tick.
	// The promises are kept in a slice made beforehand; the audit callbacks are attached only
	// after the measurement, so that the test's own records are not counted.
	promises := make([]*calls.Promise[*testpb.EchoResponse], rejectedN)
	req := &testpb.EchoRequest{Message: "rejected"}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range promises {
		promises[i] = reactor.Call(h.r, echo, req, nil)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	perCall := float64(grown) / rejectedN
	t.Logf("heap grew by %d bytes for %d rejected calls: %.0f bytes per rejected call", grown, rejectedN, perCall)
	// The records are a callcore.Call inside the promise, a *calls.Error with its status and
	// message, and a node in the queue for Tick: under a kilobyte. 2 KiB leaves room for
	// allocator size classes and for -race; a rejected call that kept its encoded request, or
	// anything per call beyond these, would exceed it.
	require.Less(t, perCall, 2048.0)
	for i, p := range promises {
		require.Equal(t, calls.Failed, p.State(), "rejected call %d is Failed when Call returns", i)
		require.ErrorIs(t, p.Err(), calls.ErrOverloaded)
	}
	var rejected []*call
	for _, p := range promises {
		rejected = append(rejected, h.track("rejected", p))
	}
	clear(promises)

	// The backend answers every admitted call, in submission order, while nobody ticks.
	for i, g := range gates {
		close(g)
		require.Eventually(t, func() bool { return h.r.Stats().InFlight == maxOutstanding-1-i }, bound, poll, "call %d completed", i)
	}
	st := h.r.Stats()
	require.Equal(t, maxOutstanding, st.Pending, "completed calls hold their slot until Tick delivers them")
	for i := range 10 {
		c := h.submit(echo, echoReq("still"), nil)
		require.True(t, c.rejected, "call %d after completion, before Tick", i)
		require.ErrorIs(t, c.p.Err(), calls.ErrOverloaded)
		rejected = append(rejected, c)
	}
	for _, c := range admitted {
		require.False(t, c.done(), "nothing is delivered without Tick")
		require.Equal(t, calls.Pending, c.p.State())
	}

	// Ticking resumes. The first Tick, with a zero budget, delivers exactly one call, and its
	// cost must not depend on the ~100,000 calls waiting behind it: no copy of the backlog, so
	// (almost) no allocation, and no more than tickOverrun of wall time (the host's audit
	// checks that).
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	first := h.Tick(0)
	runtime.ReadMemStats(&m1)
	t.Logf("first Tick after the stall: %+v, %d bytes allocated", first, m1.TotalAlloc-m0.TotalAlloc)
	require.Equal(t, 1, first.Delivered)
	// Everything settled before the last completion is waiting (the reactor takes its events
	// in order and published InFlight 0 after queueing them); the 10 later rejections may
	// still be on their way to the queue.
	require.GreaterOrEqual(t, first.Remaining, maxOutstanding+rejectedN-1)
	require.LessOrEqual(t, first.Remaining, maxOutstanding+len(rejected)-1)
	// The bound is a quarter of what copying the backlog's ~100,000 pointers would allocate
	// (800 KB), and far above what the process-wide counter also sees meanwhile: the
	// harness's own audit and the reactor goroutine.
	require.Less(t, m1.TotalAlloc-m0.TotalAlloc, uint64(200<<10), "the first Tick copied the backlog")
	h.settle()
	for i, c := range admitted {
		require.NoError(t, c.err)
		require.Equal(t, strconv.Itoa(i), c.resp.GetMessage())
		if i > 0 {
			require.Greater(t, c.order, admitted[i-1].order, "call %d delivered after call %d", i, i-1)
		}
	}
	for _, c := range rejected {
		require.ErrorIs(t, c.err, calls.ErrOverloaded)
	}
	st = h.r.Stats()
	require.Zero(t, st.Pending)
	require.EqualValues(t, len(rejected), st.Overloaded)
	require.EqualValues(t, maxOutstanding, st.Succeeded)
	require.EqualValues(t, maxOutstanding, srv.Calls(), "rejected calls never reached the server")
	// Admission is open again.
	again := h.submit(echo, echoReq("0"), nil)
	require.False(t, again.rejected)
	h.settle(again)
	require.NoError(t, again.err)
}

// TestFaultCloseDuringBurst: Close with a 1 s context while 10,000 calls are outstanding,
// 2,048 of them held by the server and the rest queued in prpc. Close returns within its
// context bound plus a margin, with the context's error since it had to cut calls off, and
// every call settles exactly once: with success (the calls the server answered at once), or
// ErrClosed (ErrCancelled is allowed by the contract, though this test cancels nothing).
func TestFaultCloseDuringBurst(t *testing.T) {
	if testing.Short() {
		t.Skip("10,000 calls and 2,048 lanes; skipped with -short")
	}
	leakCheck(t)
	const (
		n          = 10_000
		workers    = 8
		batch      = 256
		closeAfter = time.Second
	)
	// After its context ends, Close settles the remaining ~8,000 calls, cancels the 2,048
	// transport calls, waits for every lane to return, closes the connection and runs the
	// remaining callbacks: tens of milliseconds of work, for which 500 ms is a generous
	// margin. -race slows this storm of wake-ups and synchronisation among some 4,000
	// goroutines (2,048 lanes and as many server handlers, in the same process) by an order of
	// magnitude, hence 4 s with -race.
	closeMargin := 500 * time.Millisecond
	if raceEnabled {
		closeMargin = 4 * time.Second
	}
	srv := testserver.Start(t)
	// Odd calls are answered at once, even ones are held until their context ends.
	var held atomic.Int64
	srv.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		i, _ := strconv.Atoi(req.GetMessage())
		if i%2 == 1 {
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		}
		held.Add(1)
		defer held.Add(-1)
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	})
	h := startHost(t, reactor.Config{Target: srv.Addr(), Workers: workers, BatchSize: batch, MaxOutstanding: 16384, DefaultTimeout: 30 * time.Second, MaxTimeout: time.Minute})
	for i := range n {
		c := h.submit(echo, echoReq(strconv.Itoa(i)), nil)
		require.False(t, c.rejected)
	}
	// Run until every slot holds a held call: the burst is at its peak.
	h.pollFor("every slot held", func() bool { return held.Load() == workers*batch })
	require.Positive(t, h.r.Stats().Queued, "calls wait in prpc for a slot")

	ctx, cancel := context.WithTimeout(context.Background(), closeAfter)
	defer cancel()
	start := time.Now()
	err := h.Close(ctx)
	took := time.Since(start)
	var lastSettled time.Time
	for _, c := range h.calls {
		lastSettled = maxTime(lastSettled, c.settled)
	}
	t.Logf("Close took %v (context %v, margin %v): %v; last callback ran %v after Close began", took, closeAfter, closeMargin, err, lastSettled.Sub(start))
	require.ErrorIs(t, err, context.DeadlineExceeded, "Close cut calls off")
	require.GreaterOrEqual(t, took, closeAfter, "held calls cannot finish, so Close waits for its context")
	require.Less(t, took, closeAfter+closeMargin)

	byCode, sample := tally(h.calls)
	t.Logf("outcomes %v; samples %v", byCode, sample)
	closed := 0
	for _, c := range h.calls {
		require.True(t, c.done(), "call %d delivered by the time Close returned", c.seq)
		switch {
		case c.err == nil:
			i, _ := strconv.Atoi(c.id)
			require.Equal(t, 1, i%2, "only answered calls succeed")
		case errors.Is(c.err, calls.ErrClosed):
			closed++
		case errors.Is(c.err, calls.ErrCancelled):
		default:
			t.Fatalf("call %d: want success, ErrClosed or ErrCancelled, got %v", c.seq, c.err)
		}
	}
	require.GreaterOrEqual(t, closed, workers*batch, "at least the held calls were cut off")
	st := h.r.Stats()
	require.Zero(t, st.Pending)
	require.Zero(t, st.InFlight)
	require.EqualValues(t, closed, st.Closed)
	late := h.submit(echo, echoReq("late"), nil) // its callbacks run in the next Close
	require.True(t, late.rejected)
	require.ErrorIs(t, late.p.Err(), calls.ErrClosed, "calls after Close fail at once")
}
