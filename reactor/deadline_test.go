package reactor_test

import (
	"context"
	"errors"
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

// TestDeadlinesWithManualClock runs calls against a server that never answers (Block: the
// handler waits for its context) and moves time with a manual clock. Timeouts are minutes
// long, so gRPC's own deadline, which runs on the system clock, is minutes away: a call that
// settles within bound after the clock moved was settled by the reactor's deadline timer.
func TestDeadlinesWithManualClock(t *testing.T) {
	srv, clock, r, h := manualDeadlineReactor(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	var errA, errB error // A has its own timeout, B the default
	pA := reactor.Call(r, echo, &testpb.EchoRequest{Message: "a", Block: true}, &calls.Options{Timeout: time.Minute}).
		OnError(func(err error) { errA = err })
	pB := reactor.Call(r, echo, &testpb.EchoRequest{Message: "b", Block: true}, nil).OnError(func(err error) { errB = err })
	// Both reached the server, so both are in the reactor's deadline heap.
	require.Eventually(t, func() bool { return srv.Calls() == 2 }, bound, poll)
	require.NoError(t, clock.WaitTimers(ctx, 1))

	clock.Advance(time.Minute)
	h.waitFor(func() bool { return errA != nil })
	require.ErrorIs(t, errA, calls.ErrTimeout)
	require.Equal(t, codes.DeadlineExceeded, status.Code(errA))
	require.Contains(t, errA.Error(), "(timeout 1m0s)")
	require.Equal(t, calls.Failed, pA.State())
	// Had B's deadline passed too, the same reactor turn would have settled it, and the Tick
	// that delivered A would have delivered it.
	require.NoError(t, errB)
	require.Equal(t, calls.Pending, pB.State())
	recv(t, srv.Cancelled(), "the server seeing the call cancelled")
	require.Eventually(t, func() bool { return r.Stats().InFlight == 1 }, bound, poll)

	require.NoError(t, clock.WaitTimers(ctx, 1))
	clock.Advance(time.Minute)
	h.waitFor(func() bool { return errB != nil })
	require.ErrorIs(t, errB, calls.ErrTimeout)
	require.Contains(t, errB.Error(), "(timeout 2m0s)", "zero Options.Timeout means DefaultTimeout")
	recv(t, srv.Cancelled(), "the server seeing the call cancelled")
	require.Eventually(t, func() bool { return r.Stats().InFlight == 0 }, bound, poll)
	require.Zero(t, clock.Timers(), "the reactor stops its timer when no call is pending")
	require.EqualValues(t, 2, r.Stats().TimedOut)
}

func TestDeadlineOutOfRangeIsInvalid(t *testing.T) {
	srv := testserver.Start(t)
	const maxTimeout = 3 * time.Second
	r := newReactor(t, srv, reactor.Config{MaxTimeout: maxTimeout, DefaultTimeout: time.Second})
	h := newHost(t, r)
	tests := []struct {
		name    string
		timeout time.Duration
		valid   bool
	}{
		{"negative", -time.Nanosecond, false},
		{"above MaxTimeout", maxTimeout + time.Nanosecond, false},
		{"MaxTimeout", maxTimeout, true},
		{"one nanosecond", time.Nanosecond, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var cbErr error
			var ran bool
			p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: tc.timeout}).
				OnError(func(err error) { cbErr = err }).
				Always(func() { ran = true })
			if tc.valid {
				require.NoError(t, p.Err())
				require.Equal(t, calls.Pending, p.State())
				h.waitFor(func() bool { return ran })
				require.NotErrorIs(t, cbErr, calls.ErrInvalidArgument, "valid timeout rejected")
				return
			}
			// Visible as soon as Call returns.
			require.ErrorIs(t, p.Err(), calls.ErrInvalidArgument)
			require.Equal(t, codes.InvalidArgument, status.Code(p.Err()))
			require.Contains(t, p.Err().Error(), "timeout")
			require.Equal(t, calls.Failed, p.State())
			h.waitFor(func() bool { return ran })
			require.Same(t, p.Err(), cbErr)
		})
	}
}

// TestDeadlineRealClock checks a 100 ms timeout on the system clock against a handler that
// never answers. Lower bound: the call cannot settle before its deadline, which is 100 ms
// after Call read the clock, itself after start. Upper bound: settling takes a timer firing
// and two goroutine hand-offs, which take microseconds, but under -race on a loaded machine a
// goroutine can wait tens of milliseconds to run, so the bound is a generous 400 ms, four
// times the timeout. It checks that the deadline is enforced, not how precisely.
func TestDeadlineRealClock(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	const timeout, slack = 100 * time.Millisecond, 400 * time.Millisecond

	var elapsed time.Duration
	var got error
	start := time.Now()
	reactor.Call(r, echo, &testpb.EchoRequest{Block: true}, &calls.Options{Timeout: timeout}).
		OnError(func(err error) { elapsed, got = time.Since(start), err })
	h.waitFor(func() bool { return got != nil })
	require.ErrorIs(t, got, calls.ErrTimeout)
	require.GreaterOrEqual(t, elapsed, timeout)
	require.LessOrEqual(t, elapsed, timeout+slack)
	recv(t, srv.Cancelled(), "the server seeing the call cancelled")
}

func TestDeadlineExceededFromServerIsTimeout(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	var got error
	reactor.Call(r, echo, &testpb.EchoRequest{FailCode: int32(codes.DeadlineExceeded), FailMessage: "backend gave up"}, nil).
		OnError(func(err error) { got = err })
	h.waitFor(func() bool { return got != nil })
	require.ErrorIs(t, got, calls.ErrTimeout)
	require.Equal(t, codes.DeadlineExceeded, status.Code(got))
	require.Contains(t, got.Error(), "backend gave up", "the server's message is kept")
	require.EqualValues(t, 1, r.Stats().TimedOut)
}

// TestDeadlineTimerLeftBehind: the reactor leaves its timer at the deadline of a call that
// has since completed rather than moving it on every turn. When that stale timer fires, the
// later call must not be timed out early, and the timer must be set again for its deadline.
func TestDeadlineTimerLeftBehind(t *testing.T) {
	srv, clock, r, h := manualDeadlineReactor(t)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()

	var okA bool
	var errB error
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "a"}, &calls.Options{Timeout: time.Minute}).
		Then(func(*testpb.EchoResponse) { okA = true })
	pB := reactor.Call(r, echo, &testpb.EchoRequest{Message: "b", Block: true}, nil).OnError(func(err error) { errB = err })
	h.waitFor(func() bool { return okA })
	require.Eventually(t, func() bool { return srv.Calls() == 2 && r.Stats().InFlight == 1 }, bound, poll)
	require.NoError(t, clock.WaitTimers(ctx, 1))

	clock.Advance(time.Minute) // A's deadline: the timer may fire, but B is not due
	require.NoError(t, clock.WaitTimers(ctx, 1), "the timer is set again, for B")
	require.NoError(t, errB)
	require.Equal(t, calls.Pending, pB.State())

	clock.Advance(time.Minute)
	h.waitFor(func() bool { return errB != nil })
	require.ErrorIs(t, errB, calls.ErrTimeout)
	require.Contains(t, errB.Error(), "(timeout 2m0s)")
	require.Eventually(t, func() bool { return r.Stats().InFlight == 0 }, bound, poll)
	require.Zero(t, clock.Timers(), "the reactor stops its timer when no call is pending")
}

// manualDeadlineReactor returns a test server and a reactor for it on a manual clock, with a
// default timeout of 2 minutes (so gRPC's own deadline, on the system clock, never fires
// first), and the reactor's host.
func manualDeadlineReactor(t *testing.T) (*testserver.Server, *reactortest.ManualClock, *reactor.Reactor, *host) {
	t.Helper()
	srv := testserver.Start(t)
	clock := reactortest.NewManualClock(time.Now())
	r := newReactor(t, srv, reactor.Config{Clock: clock, DefaultTimeout: 2 * time.Minute, MaxTimeout: 10 * time.Minute})
	return srv, clock, r, newHost(t, r)
}

// The transport call's context carries the call's deadline for gRPC to send, or the parent
// context's if that is earlier; the parent's expiry ends the call.
func TestTransportContextDeadline(t *testing.T) {
	parentDeadline := time.Now().Add(200 * time.Millisecond)
	parent, cancel := context.WithDeadline(context.Background(), parentDeadline)
	defer cancel()
	tests := []struct {
		name   string
		opts   *calls.Options
		within func(submit time.Time) (time.Time, time.Time) // bounds of the deadline gRPC sees
	}{
		{"the call's own", &calls.Options{Timeout: 3 * time.Second}, func(submit time.Time) (time.Time, time.Time) {
			return submit.Add(3 * time.Second), time.Now().Add(3 * time.Second)
		}},
		{"an earlier parent's", &calls.Options{Timeout: 3 * time.Second, Context: parent}, func(time.Time) (time.Time, time.Time) {
			return parentDeadline, parentDeadline
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &recordingConn{block: make(chan struct{}), entered: make(chan struct{}, 1)}
			r := newReactor(t, nil, reactor.Config{Conn: fake})
			submit := time.Now()
			var err error
			var took time.Duration
			done := false
			reactor.Call(r, echo, &testpb.EchoRequest{Message: "x"}, tc.opts).
				OnError(func(e error) { err = e }).Always(func() { took, done = time.Since(submit), true })
			<-fake.entered
			lo, hi := tc.within(submit)
			fake.mu.Lock()
			got := fake.calls[0].deadline
			fake.mu.Unlock()
			require.False(t, got.Before(lo), "deadline %v before %v", got, lo)
			require.False(t, got.After(hi), "deadline %v after %v", got, hi)
			if tc.opts.Context == nil {
				close(fake.block)
				waitFor(t, r, func() bool { return done })
				require.NoError(t, err)
				return
			}
			// The parent expires first: the call ends with ErrTimeout (its deadline passed),
			// well before its own 3 s. The 2 s bound is ten times the parent's 200 ms, a
			// generous margin that still tells the two deadlines apart.
			waitFor(t, r, func() bool { return done })
			require.True(t, errors.Is(err, calls.ErrTimeout), "%v", err)
			require.Less(t, took, 2*time.Second, "ended by the parent's deadline, not by its own")
		})
	}
}
