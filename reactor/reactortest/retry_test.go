package reactortest_test

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

var echoOther = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Other/Echo")

// flakySpec says which attempts a flaky handler fails: the first failures, with code, doing
// before each failure what before says.
type flakySpec struct {
	failures int
	code     codes.Code
	before   func(ctx context.Context) // before failing: send a header, set a trailer, …
}

// flaky is a handler that fails as its flakySpec says and numbers the attempts in their
// trailers.
type flaky struct {
	flakySpec

	mu       sync.Mutex
	attempts int
}

func (f *flaky) handle(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	f.mu.Lock()
	f.attempts++
	n := f.attempts
	f.mu.Unlock()
	if err := grpc.SetTrailer(ctx, metadata.Pairs("attempt", strconv.Itoa(n))); err != nil {
		return nil, err
	}
	if n > f.failures {
		return &testpb.EchoResponse{Message: "attempt " + strconv.Itoa(n)}, nil
	}
	if f.before != nil {
		f.before(ctx)
	}
	return nil, status.Errorf(f.code, "attempt %d refused", n)
}

// TestBackendRetries checks that a Backend retries the calls of idempotent methods as gRPC
// retries them with the service config reactor.New generates, and no others.
func TestBackendRetries(t *testing.T) {
	idempotent := []reactor.MethodPolicy{{Method: echo, Idempotent: true, ResponseMetadata: true}, {Method: echoOther, ResponseMetadata: true}}
	sendHeader := func(ctx context.Context) { _ = grpc.SendHeader(ctx, metadata.Pairs("x-h", "1")) }
	setHeader := func(ctx context.Context) { _ = grpc.SetHeader(ctx, metadata.Pairs("x-h", "1")) }
	pushback := func(ms string) func(context.Context) {
		return func(ctx context.Context) { _ = grpc.SetTrailer(ctx, metadata.Pairs("grpc-retry-pushback-ms", ms)) }
	}
	tests := []struct {
		name     string
		retry    reactor.RetryPolicy
		method   *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse]
		payload  int
		flaky    flakySpec
		attempts int
		code     codes.Code
		message  string // of the call's status, if not empty
	}{
		{name: "fails twice, succeeds at the third attempt", method: echo,
			// A backoff of a minute would outlast the call's deadline (1.5 s): the Backend
			// does not wait it out.
			retry: reactor.RetryPolicy{InitialBackoff: time.Minute, MaxBackoff: time.Minute},
			flaky: flakySpec{failures: 2, code: codes.Unavailable}, attempts: 3},
		{name: "out of attempts: grpc-go's message", method: echo,
			flaky: flakySpec{failures: 10, code: codes.Unavailable}, attempts: 3, code: codes.Unavailable,
			message: "max retries exhausted: failed after 3 attempts: rpc error: code = Unavailable desc = attempt 3 refused"},
		{name: "MaxAttempts", method: echo, retry: reactor.RetryPolicy{MaxAttempts: 5},
			flaky: flakySpec{failures: 10, code: codes.Unavailable}, attempts: 5, code: codes.Unavailable},
		{name: "a method that is not idempotent is never retried", method: echoOther,
			flaky: flakySpec{failures: 2, code: codes.Unavailable}, attempts: 1, code: codes.Unavailable, message: "attempt 1 refused"},
		{name: "a code that is not retryable", method: echo,
			flaky: flakySpec{failures: 2, code: codes.Aborted}, attempts: 1, code: codes.Aborted},
		{name: "RetryableCodes", method: echo, retry: reactor.RetryPolicy{RetryableCodes: []codes.Code{codes.Aborted}},
			flaky: flakySpec{failures: 2, code: codes.Aborted}, attempts: 3},
		{name: "RetryableCodes leave Unavailable out", method: echo, retry: reactor.RetryPolicy{RetryableCodes: []codes.Code{codes.Aborted}},
			flaky: flakySpec{failures: 2, code: codes.Unavailable}, attempts: 1, code: codes.Unavailable},
		{name: "a header sent commits the call", method: echo,
			flaky: flakySpec{failures: 2, code: codes.Unavailable, before: sendHeader}, attempts: 1, code: codes.Unavailable},
		{name: "a header set before a failure commits the call", method: echo,
			flaky: flakySpec{failures: 2, code: codes.Unavailable, before: setHeader}, attempts: 1, code: codes.Unavailable},
		{name: "a pushback that forbids a retry", method: echo,
			flaky: flakySpec{failures: 2, code: codes.Unavailable, before: pushback("-1")}, attempts: 1, code: codes.Unavailable},
		{name: "a pushback that is not a number", method: echo,
			flaky: flakySpec{failures: 2, code: codes.Unavailable, before: pushback("soon")}, attempts: 1, code: codes.Unavailable},
		{name: "a pushback that allows a retry, not waited out", method: echo,
			flaky: flakySpec{failures: 2, code: codes.Unavailable, before: pushback("60000")}, attempts: 3},
		{name: "a request larger than grpc-go's retry buffer is not retried", method: echo, payload: 256 << 10,
			flaky: flakySpec{failures: 2, code: codes.Unavailable}, attempts: 1, code: codes.Unavailable},
		{name: "a request within the retry buffer is", method: echo, payload: 256<<10 - 16,
			flaky: flakySpec{failures: 2, code: codes.Unavailable}, attempts: 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			f := &flaky{flakySpec: tc.flaky}
			reactortest.Handle(b, echo, f.handle)
			reactortest.Handle(b, echoOther, f.handle)
			r := reactortest.NewReactor(t, b, reactor.Config{Policies: idempotent, Retry: tc.retry})
			var got string
			p := reactor.Call(r, tc.method, &testpb.EchoRequest{Payload: make([]byte, tc.payload)}, nil).
				Then(func(resp *testpb.EchoResponse) { got = resp.GetMessage() })
			reactortest.Flush(t, r)

			require.Equal(t, tc.code, status.Code(p.Err()), "%v", p.Err())
			require.Equal(t, tc.attempts, b.Calls(tc.method.Path()), "attempts")
			if tc.message != "" {
				require.Equal(t, tc.message, status.Convert(p.Err()).Message())
			}
			// The call keeps the last attempt's trailer.
			require.Equal(t, []string{strconv.Itoa(tc.attempts)}, p.Trailer().Get("attempt"))
			if tc.code == codes.OK {
				require.Equal(t, "attempt "+strconv.Itoa(tc.attempts), got)
			}
		})
	}
}

// TestBackendRetryThrottle checks that retries are throttled as gRPC throttles them, per
// reactor: each retryable failure takes a token, each success gives back ThrottleTokenRatio,
// and no call is retried while at most half of ThrottleMaxTokens remain.
func TestBackendRetryThrottle(t *testing.T) {
	b := reactortest.NewBackend()
	var fail atomic.Bool
	fail.Store(true)
	reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if fail.Load() {
			return nil, status.Error(codes.Unavailable, "down")
		}
		return &testpb.EchoResponse{}, nil
	})
	cfg := reactor.Config{
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true}},
		Retry:    reactor.RetryPolicy{MaxAttempts: 5, ThrottleMaxTokens: 4, ThrottleTokenRatio: 1},
	}
	r := reactortest.NewReactor(t, b, cfg)
	attempts := func(r *reactor.Reactor) int {
		t.Helper()
		before := b.Calls(echo.Path())
		reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
		reactortest.Flush(t, r)
		return b.Calls(echo.Path()) - before
	}
	require.Equal(t, 2, attempts(r), "4 tokens: the 1st failure leaves 3, retried; the 2nd leaves 2, throttled")
	require.Equal(t, 1, attempts(r), "1 token left: throttled at once")
	other := reactortest.NewReactor(t, b, cfg)
	require.Equal(t, 2, attempts(other), "another reactor has a throttle of its own")

	fail.Store(false)
	require.Equal(t, 1, attempts(r))
	require.Equal(t, 1, attempts(r))
	require.Equal(t, 1, attempts(r), "3 successes give back 3 tokens: 4")
	fail.Store(true)
	require.Equal(t, 2, attempts(r), "retried again")
}

// TestBackendRetryDeadline checks that the deadline covers every attempt: a call whose
// deadline passes during an attempt is not retried, even when the attempt's code (Canceled,
// as the reactor ends the call's context) is one the policy retries.
func TestBackendRetryDeadline(t *testing.T) {
	clock := reactortest.NewManualClock(time.Unix(1_700_000_000, 0))
	b := reactortest.NewBackend()
	entered := make(chan struct{}, 1)
	reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		entered <- struct{}{}
		<-ctx.Done()
		return nil, status.Error(codes.Unavailable, "too late")
	})
	r := reactortest.NewReactor(t, b, reactor.Config{
		Clock:    clock,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true}},
		Retry:    reactor.RetryPolicy{RetryableCodes: []codes.Code{codes.Unavailable, codes.Canceled, codes.DeadlineExceeded}},
	})
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	<-entered
	clock.Advance(reactor.DefaultTimeout)
	reactortest.Flush(t, r)
	require.ErrorIs(t, p.Err(), calls.ErrTimeout)
	require.Equal(t, 1, b.Calls(echo.Path()))
}
