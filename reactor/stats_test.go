package reactor_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestStatsMethods checks Stats.Methods for two methods: counts by outcome and code, the
// invariant Submitted = Succeeded + Σ Failed + pending, and exact latency percentiles. A
// manual clock makes latencies exact: each call runs alone, and the clock is advanced by the
// latency wanted between its completion and the Tick that delivers it.
func TestStatsMethods(t *testing.T) {
	release := make(chan struct{})
	releaseAll := sync.OnceFunc(func() { close(release) })
	entered := make(chan struct{}, 8)
	handler := func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		switch id := req.GetMessage(); {
		case strings.HasPrefix(id, "hold"):
			entered <- struct{}{}
			select {
			case <-release:
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		case strings.HasPrefix(id, "notfound"):
			return nil, status.Error(codes.NotFound, id)
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}
	srv := startBoth(t, handler)
	clk := reactortest.NewManualClock(time.Now())
	r := newReactor(t, srv, reactor.Config{
		Clock:      clk,
		MaxTimeout: time.Hour,
		// Far above the 11 s the clock is advanced in all: no call times out.
		DefaultTimeout: time.Hour,
	})
	t.Cleanup(releaseAll) // before Close, if the test fails early
	h := newHost(t, r)

	// Three Echo calls held by the server: pending throughout the first part.
	for i := range 3 {
		h.submit(echo, echoReq("hold"+strconv.Itoa(i)), nil)
	}
	for range 3 {
		recv(t, entered, "a held call at the server")
	}
	// deliverAfter waits until the only call not held has settled, advances the clock by d
	// and delivers it: its latency is exactly d.
	deliverAfter := func(o *call, d time.Duration) {
		t.Helper()
		recv(t, r.Ready(), "call "+o.id+" settled")
		clk.Advance(d)
		h.Tick(time.Second)
		require.True(t, o.settledOnce(), "call %s", o.id)
	}
	// Echo: 20 calls with latencies 1…20 ms, every 4th failing with NotFound; one rejected at
	// submission (no latency sample).
	for i := 1; i <= 20; i++ {
		id := "ok" + strconv.Itoa(i)
		if i%4 == 0 {
			id = "notfound" + strconv.Itoa(i)
		}
		deliverAfter(h.submit(echo, echoReq(id), nil), time.Duration(i)*time.Millisecond)
	}
	deliverAfter(h.submit(echo, echoReq("invalid"), &calls.Options{Timeout: -1}), 0)
	// Other: 10 calls with latencies 100…1000 ms.
	for i := 1; i <= 10; i++ {
		deliverAfter(h.submit(echoOther, echoReq("other"+strconv.Itoa(i)), nil), time.Duration(i)*100*time.Millisecond)
	}

	s := r.Stats()
	e, o := s.Methods[echo.Path()], s.Methods[echoOther.Path()]
	require.Len(t, s.Methods, 2)
	require.EqualValues(t, 24, e.Submitted) // 3 held, 20, 1 rejected
	require.EqualValues(t, 15, e.Succeeded)
	require.Equal(t, map[codes.Code]uint64{codes.NotFound: 5, codes.InvalidArgument: 1}, e.Failed)
	require.EqualValues(t, 3, e.Submitted-e.Succeeded-sum(e.Failed), "Echo's pending calls")
	// Nearest rank over 1…20 ms: P50 = 10th, P95 = 19th, P99 = 20th sample.
	require.Equal(t, reactor.Latency{Samples: 20, P50: 10 * time.Millisecond, P95: 19 * time.Millisecond, P99: 20 * time.Millisecond, Max: 20 * time.Millisecond}, e.Latency)
	require.EqualValues(t, 10, o.Submitted)
	require.EqualValues(t, 10, o.Succeeded)
	require.Empty(t, o.Failed)
	require.Equal(t, reactor.Latency{Samples: 10, P50: 500 * time.Millisecond, P95: time.Second, P99: time.Second, Max: time.Second}, o.Latency)
	requireMethodsAddUp(t, s)
	require.Equal(t, 3, s.Pending)

	// Release the held calls 5 s later: they were submitted at the start, 5.71 s
	// (Σ 1…20 ms + Σ 100…1000 ms) before the release, so their latency is 10.71 s.
	clk.Advance(5 * time.Second)
	releaseAll()
	h.settle()
	s = r.Stats()
	e = s.Methods[echo.Path()]
	require.EqualValues(t, 24, e.Submitted)
	require.EqualValues(t, 18, e.Succeeded)
	require.Equal(t, e.Submitted, e.Succeeded+sum(e.Failed), "Echo's counts once drained")
	held := 10710 * time.Millisecond
	// 23 samples: 1…20 ms and 3 × 10.71 s; P50 = 12th, P95 = 22nd, P99 = 23rd.
	require.Equal(t, reactor.Latency{Samples: 23, P50: 12 * time.Millisecond, P95: held, P99: held, Max: held}, e.Latency)
	require.Equal(t, o, s.Methods[echoOther.Path()], "Other's stats did not change")
	requireMethodsAddUp(t, s)
	require.Zero(t, s.Pending)
}

// Stats.Latency and MethodStats.Latency cover the most recent 1024 calls: a call delivered
// 1024 calls ago has left the window. A manual clock makes the old call's latency 1 s and
// every later one's zero.
func TestStatsLatencyCoversTheLast1024Calls(t *testing.T) {
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: clk, MaxTimeout: time.Hour, DefaultTimeout: time.Hour})

	reactor.Call(r, echo, echoReq("old"), nil)
	recv(t, r.Ready(), "the old call settled")
	clk.Advance(time.Second)
	reactortest.Flush(t, r)
	require.Equal(t, time.Second, r.Stats().Latency.Max, "the old call's latency")

	for i := range 1024 {
		reactor.Call(r, echo, echoReq(strconv.Itoa(i)), nil)
	}
	reactortest.Flush(t, r)
	s := r.Stats()
	want := reactor.Latency{Samples: 1024}
	require.Equal(t, want, s.Latency, "the old call has left the window")
	require.Equal(t, want, s.Methods[echo.Path()].Latency)
	// The histograms keep every call since the reactor started.
	require.Equal(t, uint64(1025), s.Histograms.Latency.Count, "the histogram keeps the old call")
	require.Equal(t, time.Second, s.Histograms.Latency.Sum, "the old call's second, the others' none")
	require.Equal(t, uint64(1025), s.Methods[echo.Path()].Histograms.Latency.Count)
}

func TestStatsInvariantDuringBusyRun(t *testing.T) {
	srv := testserver.Start(t)
	const maxOutstanding = 32
	r := newReactor(t, srv, reactor.Config{Workers: 2, BatchSize: 4, MaxOutstanding: maxOutstanding})
	h := newHost(t, r)

	// A mix of outcomes: success, server error, local timeout, invalid input; overload comes
	// from the burst itself.
	kinds := []struct {
		req  *testpb.EchoRequest
		opts *calls.Options
	}{
		{&testpb.EchoRequest{Message: "ok"}, nil},
		{&testpb.EchoRequest{FailCode: int32(codes.NotFound)}, nil},
		{&testpb.EchoRequest{DelayMs: 200}, &calls.Options{Timeout: 5 * time.Millisecond}},
		{nil, nil},
		{&testpb.EchoRequest{}, &calls.Options{Timeout: -time.Second}},
	}
	const submitters, perSubmitter = 4, 200
	const total = submitters * perSubmitter

	stop := sampleStats(r, func(s reactor.Stats) string {
		failed := sum(s.Failed)
		switch {
		case s.Submitted != s.Succeeded+failed+uint64(s.Pending):
			return fmt.Sprintf("Submitted %d != Succeeded %d + Failed %d + Pending %d", s.Submitted, s.Succeeded, failed, s.Pending)
		case s.TimedOut+s.Overloaded+s.Cancelled+s.Closed > failed:
			return fmt.Sprintf("failure reasons %d exceed Failed %d", s.TimedOut+s.Overloaded+s.Cancelled+s.Closed, failed)
		case s.Pending < 0 || s.Pending > maxOutstanding:
			return fmt.Sprintf("Pending %d outside [0, %d]", s.Pending, maxOutstanding)
		}
		return ""
	})

	var delivered int // callbacks run on this goroutine only
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Go(func() {
			for i := range perSubmitter {
				k := kinds[(s+i)%len(kinds)]
				reactor.Call(r, echo, k.req, k.opts).Always(func() { delivered++ })
			}
		})
	}
	h.waitFor(func() bool { return delivered == total })
	wg.Wait()
	violation, samples := stop()
	require.Empty(t, violation)
	require.Positive(t, samples)

	s := r.Stats()
	failed := sum(s.Failed)
	require.EqualValues(t, total, s.Submitted)
	require.Zero(t, s.Pending)
	require.EqualValues(t, total, s.Succeeded+failed)
	t.Logf("%d samples; succeeded %d, failed %v, timed out %d, overloaded %d", samples, s.Succeeded, s.Failed, s.TimedOut, s.Overloaded)
}

// Stats.Pending counts only admitted calls, so no snapshot shows more than MaxOutstanding,
// even while Tick frees slots that submitters waiting at the limit take at once and the
// reactor goroutine counts their calls. (Tick must count a delivered call before it frees the
// call's slot.)
func TestStatsPendingWithinMaxOutstanding(t *testing.T) {
	const maxOutstanding, submitters, perSubmitter = 2, 2, 2500
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{MaxOutstanding: maxOutstanding})
	h := newHost(t, r)

	require.Equal(t, maxOutstanding, r.Stats().MaxOutstanding, "Stats reports the bound")
	stop := sampleStats(r, func(s reactor.Stats) string {
		if s.Pending > maxOutstanding {
			return fmt.Sprintf("Pending %d above MaxOutstanding %d", s.Pending, maxOutstanding)
		}
		return ""
	})

	var succeeded int // callbacks run on this goroutine only; rejections run them too
	var wg sync.WaitGroup
	for range submitters {
		wg.Go(func() {
			req := &testpb.EchoRequest{Message: "m"}
			for sent := 0; sent < perSubmitter; {
				err := reactor.Go(r, echo, req, nil, func(_ *testpb.EchoResponse, err error) {
					if err == nil {
						succeeded++
					}
				})
				switch {
				case err == nil:
					sent++
				case errors.Is(err, calls.ErrOverloaded):
					runtime.Gosched() // at the limit: try again once a Tick frees a slot
				default:
					t.Errorf("Go: %v", err)
					return
				}
			}
		})
	}
	h.waitFor(func() bool { return succeeded == submitters*perSubmitter && r.Idle() })
	wg.Wait()
	violation, _ := stop()
	require.Empty(t, violation)
	require.Positive(t, r.Stats().Overloaded, "submitters waited at the limit")
}

// sampleStats takes snapshots of r.Stats on a goroutine of its own, as fast as it can, and
// passes each to check, which describes a violation or returns "". The returned stop ends the
// sampling and returns the first violation, or "", and the number of snapshots checked.
func sampleStats(r *reactor.Reactor, check func(reactor.Stats) string) (stop func() (violation string, samples int)) {
	done := make(chan struct{})
	var violation string
	var samples int
	var sampler sync.WaitGroup
	sampler.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			if violation = check(r.Stats()); violation != "" {
				return
			}
			samples++
			runtime.Gosched()
		}
	})
	return func() (string, int) {
		close(done)
		sampler.Wait()
		return violation, samples
	}
}

// sum returns the total of a Failed map.
func sum(m map[codes.Code]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// requireMethodsAddUp checks that the per-method counters add up to the reactor's.
func requireMethodsAddUp(t *testing.T, s reactor.Stats) {
	t.Helper()
	var submitted, succeeded uint64
	failed := map[codes.Code]uint64{}
	for _, m := range s.Methods {
		submitted += m.Submitted
		succeeded += m.Succeeded
		for c, n := range m.Failed {
			failed[c] += n
		}
	}
	require.Equal(t, s.Submitted, submitted, "Σ Methods[].Submitted")
	require.Equal(t, s.Succeeded, succeeded, "Σ Methods[].Succeeded")
	require.Equal(t, s.Failed, failed, "Σ Methods[].Failed")
	require.Equal(t, s.Submitted, s.Succeeded+sum(s.Failed)+uint64(s.Pending), "Submitted = Succeeded + Σ Failed + Pending")
}
