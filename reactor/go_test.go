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
)

// goOutcome is what one reactor.Go callback received, and where it ran.
type goOutcome struct {
	resp   *testpb.EchoResponse
	err    error
	runs   int
	onHost bool
}

// TestGo checks the callback form: fn runs exactly once, inside a Tick on the host
// goroutine, with the response or the error, for every way a call ends; a call rejected at
// submission returns its error at once and still reaches fn at the next Tick.
func TestGo(t *testing.T) {
	tests := []struct {
		name     string
		cfg      reactor.Config
		req      *testpb.EchoRequest
		opts     *calls.Options
		rejected bool // Go returns the error
		want     func(t *testing.T, o *goOutcome)
	}{
		{name: "success", req: &testpb.EchoRequest{Message: "hi"}, want: func(t *testing.T, o *goOutcome) {
			require.NoError(t, o.err)
			require.Equal(t, "hi", o.resp.GetMessage())
		}},
		{name: "a server's status", req: &testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"},
			want: func(t *testing.T, o *goOutcome) {
				require.Nil(t, o.resp, "the zero response with an error")
				require.Equal(t, codes.NotFound, status.Code(o.err))
				var ce *calls.Error
				require.ErrorAs(t, o.err, &ce)
			}},
		{name: "timeout", req: &testpb.EchoRequest{Block: true}, opts: &calls.Options{Timeout: 20 * time.Millisecond},
			want: func(t *testing.T, o *goOutcome) { require.ErrorIs(t, o.err, calls.ErrTimeout) }},
		{name: "request that does not encode", req: &testpb.EchoRequest{Message: "\xff"},
			want: func(t *testing.T, o *goOutcome) { require.ErrorIs(t, o.err, calls.ErrInvalidArgument) }},
		{name: "nil request", rejected: true,
			want: func(t *testing.T, o *goOutcome) { require.ErrorIs(t, o.err, calls.ErrInvalidArgument) }},
		{name: "overload", cfg: reactor.Config{MaxOutstanding: 1}, req: &testpb.EchoRequest{}, rejected: true,
			want: func(t *testing.T, o *goOutcome) { require.ErrorIs(t, o.err, calls.ErrOverloaded) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newReactor(t, srv, tc.cfg)
			h := newHost(t, r)
			if tc.cfg.MaxOutstanding == 1 { // the one slot is taken
				reactor.Call(r, echo, &testpb.EchoRequest{Block: true}, nil)
			}
			o := &goOutcome{}
			err := reactor.Go(r, echo, tc.req, tc.opts, func(resp *testpb.EchoResponse, err error) {
				o.resp, o.err, o.runs, o.onHost = resp, err, o.runs+1, h.onHost()
			})
			require.Zero(t, o.runs, "fn ran inside Go")
			if tc.rejected {
				require.Error(t, err)
				recv(t, r.Ready(), "a wake-up for the rejection")
				h.Tick(time.Second)
				require.Equal(t, 1, o.runs, "the rejection reaches fn at the next Tick")
				require.Same(t, err, o.err, "fn gets the error Go returned")
			} else {
				require.NoError(t, err)
				h.waitFor(func() bool { return o.runs > 0 })
			}
			require.True(t, o.onHost, "fn ran on the goroutine inside Tick")
			tc.want(t, o)
			for range 3 {
				h.Tick(time.Second)
			}
			require.Equal(t, 1, o.runs, "fn runs exactly once")
		})
	}
}

func TestGoCountsInStats(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	done := 0
	for range 10 {
		require.NoError(t, reactor.Go(r, echo, &testpb.EchoRequest{}, nil, func(*testpb.EchoResponse, error) { done++ }))
	}
	_ = reactor.Go(r, echo, nil, nil, func(*testpb.EchoResponse, error) { done++ })
	h.waitFor(func() bool { return done == 11 })
	s := r.Stats()
	require.EqualValues(t, 11, s.Submitted)
	require.EqualValues(t, 10, s.Succeeded)
	require.EqualValues(t, 1, s.Failed[codes.InvalidArgument])
	require.Zero(t, s.Pending)
	require.True(t, r.Idle())
}

// A callback that panics affects no other call, as a promise's does.
func TestGoCallbackPanicIsIsolated(t *testing.T) {
	srv := testserver.Start(t)
	panics := make(chan any, 1)
	r := newReactor(t, srv, reactor.Config{OnCallbackPanic: func(p any) { panics <- p }})
	h := newHost(t, r)
	var after bool
	require.NoError(t, reactor.Go(r, echo, &testpb.EchoRequest{}, nil, func(*testpb.EchoResponse, error) { panic("game bug") }))
	require.NoError(t, reactor.Go(r, echo, &testpb.EchoRequest{}, nil, func(*testpb.EchoResponse, error) { after = true }))
	h.waitFor(func() bool { return after && len(panics) == 1 })
	require.Equal(t, "game bug", <-panics)
}

// A call of the callback form follows the deadline and the cancellation of Options.Context.
func TestGoParentContext(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	ctx, cancel := context.WithCancel(context.Background())
	var got error
	require.NoError(t, reactor.Go(r, echo, &testpb.EchoRequest{Block: true}, &calls.Options{Context: ctx},
		func(_ *testpb.EchoResponse, err error) { got = err }))
	cancel()
	h.waitFor(func() bool { return got != nil })
	require.ErrorIs(t, got, calls.ErrCancelled)
	require.True(t, errors.Is(got, context.Canceled))
}

func TestGoPanicsOnNil(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	fn := func(*testpb.EchoResponse, error) {}
	requirePrpcPanic(t, func() { _ = reactor.Go(nil, echo, &testpb.EchoRequest{}, nil, fn) })
	requirePrpcPanic(t, func() {
		_ = reactor.Go[*testpb.EchoRequest, *testpb.EchoResponse](r, nil, &testpb.EchoRequest{}, nil, fn)
	})
	requirePrpcPanic(t, func() { _ = reactor.Go(r, echo, &testpb.EchoRequest{}, nil, nil) })
}

// TestOnSettled checks the promise's one-callback form: it runs once with the response or
// the error, in registration order among the promise's other callbacks.
func TestOnSettled(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)

	var order []string
	ok := reactor.Call(r, echo, &testpb.EchoRequest{Message: "hi"}, nil).
		OnSettled(func(resp *testpb.EchoResponse, err error) {
			require.NoError(t, err)
			order = append(order, "settled:"+resp.GetMessage())
		}).
		Then(func(*testpb.EchoResponse) { order = append(order, "then") })
	failed := reactor.Call(r, echo, nil, nil).
		Then(func(*testpb.EchoResponse) { order = append(order, "never") }).
		OnSettled(func(resp *testpb.EchoResponse, err error) {
			require.Nil(t, resp)
			require.ErrorIs(t, err, calls.ErrInvalidArgument)
			order = append(order, "settled:failed")
		})
	h.waitFor(func() bool { return len(order) == 3 })
	require.ElementsMatch(t, []string{"settled:hi", "then", "settled:failed"}, order)
	require.Less(t, indexOf(order, "settled:hi"), indexOf(order, "then"), "registration order")

	// Registered after delivery: at the next Tick, once.
	order = nil
	ok.OnSettled(func(*testpb.EchoResponse, error) { order = append(order, "late") })
	failed.OnSettled(func(*testpb.EchoResponse, error) { order = append(order, "late-failed") })
	require.Empty(t, order)
	h.Tick(time.Second)
	require.ElementsMatch(t, []string{"late", "late-failed"}, order)
	h.Tick(time.Second)
	require.Len(t, order, 2)
	requirePrpcPanic(t, func() { ok.OnSettled(nil) })
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}
