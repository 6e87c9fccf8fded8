package reactortest_test

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	encproto "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	prpccodec "github.com/trixnew/prpc/codec"
	"github.com/trixnew/prpc/internal/standin"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestBackendHandlerDeadlineOnManualClock checks that a handler's context keeps the context
// contract on a ManualClock, as a server's handler context does on the server's clock: its
// Deadline is the call's timeout from its start on the system clock, it is not done a
// nanosecond before the call's deadline on the ManualClock, and
// as soon as Advance reaches it (before Advance returns) it is done with
// context.DeadlineExceeded, as are the contexts derived from it. Meanwhile the reactor's
// timer stays the clock's only timer. A handler that returns after its deadline does not
// complete the call. A cancelled call cancels the context; no goroutine is left behind.
func TestBackendHandlerDeadlineOnManualClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	const timeout = 2 * time.Second
	tests := []struct {
		name string
		// act runs in the handler once the test has checked its context: it moves the clock
		// or cancels the call (p), and returns what the handler returns.
		act     func(ctx context.Context, clock *reactortest.ManualClock, cancel func()) (*testpb.EchoResponse, error)
		wantErr error // the context's error once act has run
		callErr error // the call's
		// async: the context ends on another goroutine (the call's cancellation), so the
		// contexts derived from it may end a moment after it; the handler waits for them.
		async bool
	}{
		{
			name: "the clock reaches the deadline",
			act: func(ctx context.Context, clock *reactortest.ManualClock, _ func()) (*testpb.EchoResponse, error) {
				clock.Advance(timeout - time.Nanosecond)
				if err := ctx.Err(); err != nil {
					return nil, status.Errorf(codes.Internal, "done a nanosecond early: %v", err)
				}
				clock.Advance(time.Nanosecond)
				return nil, ctx.Err()
			},
			wantErr: context.DeadlineExceeded,
			callErr: calls.ErrTimeout,
		},
		{
			name: "a response after the deadline",
			act: func(_ context.Context, clock *reactortest.ManualClock, _ func()) (*testpb.EchoResponse, error) {
				clock.Advance(timeout + time.Second) // slow work: a server would cut the call off
				return &testpb.EchoResponse{Message: "too late"}, nil
			},
			wantErr: context.DeadlineExceeded,
			callErr: calls.ErrTimeout,
		},
		{
			name: "the call is cancelled",
			act: func(ctx context.Context, _ *reactortest.ManualClock, cancel func()) (*testpb.EchoResponse, error) {
				cancel()
				<-ctx.Done()
				return nil, ctx.Err()
			},
			wantErr: context.Canceled,
			callErr: calls.ErrCancelled,
			async:   true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
			clock := reactortest.NewManualClock(start)
			type seen struct {
				deadline      time.Time
				hasDeadline   bool
				started       time.Time // on the system clock, once the handler has read its deadline
				errBefore     error
				timersBefore  int
				err, childErr error
				cause         error
				doneClosed    bool
			}
			got := make(chan seen, 1)
			cancelCall := make(chan func(), 1)
			b := reactortest.NewBackend()
			reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				var s seen
				s.deadline, s.hasDeadline = ctx.Deadline()
				s.started = time.Now()
				s.errBefore = ctx.Err()
				// Once the reactor's timer is set for the deadline, it is the only timer: the
				// handler's deadline is none.
				wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if err := clock.WaitTimerBy(wctx, start.Add(timeout)); err != nil {
					return nil, err
				}
				s.timersBefore = clock.Timers()
				child, cancelChild := context.WithCancel(ctx)
				defer cancelChild()
				resp, err := tc.act(ctx, clock, <-cancelCall)
				if tc.async {
					<-child.Done()
				}
				s.err, s.childErr, s.cause = ctx.Err(), child.Err(), context.Cause(ctx)
				select {
				case <-ctx.Done():
					s.doneClosed = true
				default:
				}
				got <- s
				return resp, err
			})
			r := reactortest.NewReactor(t, b, reactor.Config{Clock: clock})
			submitted := time.Now()
			p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: timeout})
			cancelCall <- p.Cancel
			reactortest.Flush(t, r)
			s := <-got
			require.True(t, s.hasDeadline)
			require.WithinRange(t, s.deadline, submitted.Add(timeout), s.started.Add(timeout), "the deadline is on the system clock")
			require.NoError(t, s.errBefore)
			require.Equal(t, 1, s.timersBefore, "the reactor's timer only")
			require.ErrorIs(t, s.err, tc.wantErr)
			require.ErrorIs(t, s.childErr, tc.wantErr, "a derived context")
			require.ErrorIs(t, s.cause, tc.wantErr)
			require.True(t, s.doneClosed, "Done is closed once Err is set")
			require.ErrorIs(t, p.Err(), tc.callErr)
			require.Zero(t, clock.Timers())
		})
	}
}

// TestBackendHandlerWallDeadlineOnManualClock checks what code a handler passes its context
// to sees, with a ManualClock that reads a date decades from the system clock's: its
// Deadline is on the system clock, the time the call has left on the ManualClock when the
// handler starts (after a retry, what the first attempt left), within the handler's start on
// the system clock; a net.Dialer on loopback connects with it, a context.WithTimeout derived
// with more time keeps it; and the context, with the derived one, is done only when the
// ManualClock reaches the call's deadline, not a nanosecond before.
func TestBackendHandlerWallDeadlineOnManualClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	const timeout = 2 * time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() { // accepts the dials, until ln closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	tests := []struct {
		name     string
		start    time.Time
		spent    time.Duration // by a first attempt that fails with Unavailable, and is retried
		attempts int32
	}{
		{"a clock decades behind", time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), 0, 1},
		{"a clock decades ahead", time.Date(2091, 2, 3, 4, 5, 6, 0, time.UTC), 0, 1},
		{"a retry after the clock moved", time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC), 1500 * time.Millisecond, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := reactortest.NewManualClock(tc.start)
			type seen struct {
				deadline, started time.Time
				dialErr           error
				derived           time.Time // the Deadline of a WithTimeout(ctx, time.Hour)
				errEarly, errAt   error     // the handler's, a nanosecond before and at its deadline
				derivedEarly      error
				derivedAt         error
			}
			got := make(chan seen, 1)
			var attempts atomic.Int32
			b := reactortest.NewBackend()
			reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				if attempts.Add(1) == 1 && tc.spent > 0 {
					clock.Advance(tc.spent)
					return nil, status.Error(codes.Unavailable, "first attempt")
				}
				var s seen
				s.deadline, _ = ctx.Deadline()
				s.started = time.Now()
				conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
				if err == nil {
					conn.Close()
				}
				s.dialErr = err
				derived, cancel := context.WithTimeout(ctx, time.Hour)
				defer cancel()
				s.derived, _ = derived.Deadline()
				wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer wcancel()
				if err := clock.WaitTimerBy(wctx, tc.start.Add(timeout)); err != nil {
					return nil, err
				}
				clock.Advance(timeout - tc.spent - time.Nanosecond)
				s.errEarly, s.derivedEarly = ctx.Err(), derived.Err()
				clock.Advance(time.Nanosecond)
				s.errAt, s.derivedAt = ctx.Err(), derived.Err()
				got <- s
				return nil, ctx.Err()
			})
			r := reactortest.NewReactor(t, b, reactor.Config{
				Clock:    clock,
				Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true}},
			})
			submitted := time.Now()
			p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: timeout})
			reactortest.Flush(t, r)
			s := <-got
			left := timeout - tc.spent
			require.WithinRange(t, s.deadline, submitted.Add(left), s.started.Add(left), "the time left on the ManualClock, on the system clock")
			require.NoError(t, s.dialErr, "a dial with the handler's context")
			require.Equal(t, s.deadline, s.derived, "a derived context with more time keeps the handler's deadline")
			require.NoError(t, s.errEarly, "done a nanosecond before the deadline on the ManualClock")
			require.NoError(t, s.derivedEarly, "the derived context, a nanosecond before the deadline")
			require.ErrorIs(t, s.errAt, context.DeadlineExceeded)
			require.ErrorIs(t, s.derivedAt, context.DeadlineExceeded, "the derived context")
			require.ErrorIs(t, p.Err(), calls.ErrTimeout)
			require.Equal(t, tc.attempts, attempts.Load())
		})
	}
}

// TestBackendDeadlinePassedBeforeHandler checks that a call whose deadline on a ManualClock
// has passed when it reaches the Backend fails with DeadlineExceeded without running its
// handler, as grpc-go's server aborts it, once the call's context (which the reactor cuts
// off at that deadline) ends. The call's context is built as a reactor's lane builds it.
func TestBackendDeadlinePassedBeforeHandler(t *testing.T) {
	defer goleak.VerifyNone(t)
	start := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	clock := reactortest.NewManualClock(start)
	b := reactortest.NewBackend()
	ran := make(chan struct{}, 1)
	reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		ran <- struct{}{}
		return &testpb.EchoResponse{}, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	ctx = standin.WithDeadline(ctx, standin.Deadline{Clock: clock, At: start.Add(-time.Nanosecond)})
	result := make(chan error, 1)
	go func() { result <- b.Invoke(ctx, echo.Path(), &testpb.EchoRequest{}, &testpb.EchoResponse{}) }()
	require.Eventually(t, func() bool { return b.Calls(echo.Path()) == 1 }, 10*time.Second, time.Millisecond)
	cancel() // the reactor cuts the call off
	require.Equal(t, codes.DeadlineExceeded, status.Code(<-result))
	require.Empty(t, ran, "the handler ran")
}

// TestBackendIncomingMetadataAsGRPCServer compares what a Backend handler and a grpc.Server
// handler on 127.0.0.1 see in their incoming metadata for the same call from a reactor:
// content-type and user-agent alike, :authority the dialled target's for the server and
// reactortest.Authority for the Backend; the caller's metadata in both.
func TestBackendIncomingMetadataAsGRPCServer(t *testing.T) {
	opts := &calls.Options{Metadata: metadata.Pairs("x-player", "42")}
	srv := testserver.Start(t)
	remote, err := reactor.New(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure()})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, remote.Close(ctx))
	})
	p := reactor.Call(remote, echo, &testpb.EchoRequest{}, opts)
	reactortest.Flush(t, remote)
	require.NoError(t, p.Err())
	server := srv.LastMetadata()

	b := reactortest.NewBackend()
	var backend metadata.MD
	reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		md, ok := metadata.FromIncomingContext(ctx)
		if !ok {
			return nil, errors.New("no incoming metadata")
		}
		backend = md
		return &testpb.EchoResponse{}, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{})
	p = reactor.Call(r, echo, &testpb.EchoRequest{}, opts)
	reactortest.Flush(t, r)
	require.NoError(t, p.Err())

	require.Equal(t, []string{"application/grpc"}, server.Get("content-type"), "as a plain grpc-go client sends it")
	for _, key := range []string{"content-type", "user-agent", "x-player"} {
		require.NotEmpty(t, server.Get(key), key)
		require.Equal(t, server.Get(key), backend.Get(key), key)
	}
	require.Equal(t, []string{srv.Addr()}, server.Get(":authority"))
	require.Equal(t, []string{reactortest.Authority}, backend.Get(":authority"))
}

// TestBackendContentType checks the content-type a handler sees for the call options a
// Backend may be called with, as grpc-go's client sets it: a content subtype the call sets
// wins, lower-cased; else the forced codec's name; else none.
func TestBackendContentType(t *testing.T) {
	codec := encoding.GetCodecV2(encproto.Name)
	tests := []struct {
		name string
		opts []grpc.CallOption
		want string
	}{
		{"no codec, no subtype", nil, "application/grpc"},
		{"forced codec", []grpc.CallOption{grpc.ForceCodecV2(codec)}, "application/grpc+proto"},
		{"subtype", []grpc.CallOption{grpc.CallContentSubtype("Proto")}, "application/grpc+proto"},
		{"a reactor's codec: no subtype", []grpc.CallOption{grpc.ForceCodecV2(prpccodec.New(limits.Limits{}))}, "application/grpc"},
		{"subtype wins over the codec", []grpc.CallOption{grpc.CallContentSubtype("custom"), grpc.ForceCodecV2(codec)}, "application/grpc+custom"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			var got []string
			reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				got = md.Get("content-type")
				return &testpb.EchoResponse{}, nil
			})
			require.NoError(t, b.Invoke(context.Background(), echo.Path(), &testpb.EchoRequest{}, &testpb.EchoResponse{}, tc.opts...))
			require.Equal(t, []string{tc.want}, got)
		})
	}
}
