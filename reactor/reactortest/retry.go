package reactortest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/memconn"
	"github.com/trixnew/prpc/internal/standin"
)

// defaultRetryBuffer is how many bytes of a call grpc-go keeps for retrying it by default
// (grpc.MaxRetryRPCBufferSize changes it per call): a larger call is committed to its first
// attempt.
const defaultRetryBuffer = 256 << 10

// messageHeader is the length of gRPC's message prefix, which grpc-go counts in the retry
// buffer.
const messageHeader = 5

// pushbackKey is the trailer by which a server tells the client when to retry, or not to.
const pushbackKey = "grpc-retry-pushback-ms"

// retrying is a Backend as a reactor whose policies mark methods idempotent calls it: it
// retries their calls as grpc-go does with the service config reactor.New generates (see
// grpc-go's csAttempt.shouldRetry), except that it does not wait between attempts. Each
// reactor has its own view and its own throttle, as each has its own channel in production.
type retrying struct {
	b        *Backend
	policy   standin.Retry
	throttle throttle
}

func newRetrying(b *Backend, policy standin.Retry) *retrying {
	tokens := float64(policy.ThrottleMaxTokens)
	return &retrying{b: b, policy: policy, throttle: throttle{tokens: tokens, max: tokens, ratio: policy.ThrottleTokenRatio}}
}

// Invoke implements grpc.ClientConnInterface: Backend.Invoke, with retries.
func (v *retrying) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	req, out, err := callArgs(args, reply, opts)
	if err != nil {
		return err
	}
	for n := 1; ; n++ {
		a := v.b.attempt(ctx, method, req, out, opts)
		if a.err == nil {
			v.throttle.succeeded()
			a.fill(opts)
			return nil
		}
		retry, err := v.shouldRetry(ctx, method, messageHeader+len(req) > retryBuffer(opts), &a, n)
		if !retry {
			a.fill(opts)
			return err
		}
	}
}

// NewStream implements grpc.ClientConnInterface: Backend.NewStream, without retries.
func (v *retrying) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	return v.b.NewStream(ctx, desc, method, opts...)
}

// shouldRetry reports whether the call of method whose attempt n failed as a says runs
// again, and if not, the call's error. large says that the request outgrew the retry buffer.
func (v *retrying) shouldRetry(ctx context.Context, method string, large bool, a *attempt, n int) (bool, error) {
	if a.committed || large || ctx.Err() != nil { // the deadline covers every attempt
		return false, a.err
	}
	if pushback := a.trailer[pushbackKey]; len(pushback) > 0 {
		if ms, err := strconv.Atoi(pushback[0]); len(pushback) > 1 || err != nil || ms < 0 {
			v.throttle.failed() // the server forbids a retry: a failure for throttling
			return false, a.err
		}
	}
	if !v.policy.Idempotent[method] || !slices.Contains(v.policy.RetryableCodes, status.Code(a.err)) {
		return false, a.err
	}
	if v.throttle.failed() {
		return false, a.err
	}
	if n >= v.policy.MaxAttempts {
		return false, fmt.Errorf("max retries exhausted: failed after %d attempts: %w", n, a.err)
	}
	return true, nil
}

// retryBuffer returns the retry buffer of a call with opts.
func retryBuffer(opts []grpc.CallOption) int {
	if b, ok := memconn.LastOption[grpc.MaxRetryRPCBufferSizeCallOption](opts); ok {
		return b.MaxRetryRPCBufferSize
	}
	return defaultRetryBuffer
}

// throttle is gRPC's retry throttle (gRFC A6): each failure that could be retried takes a
// token, each successful call gives back ratio of one, and retries stop while at most half
// of max remain.
type throttle struct {
	mu          sync.Mutex
	tokens, max float64
	ratio       float64
}

// failed takes a token and reports whether retries are throttled.
func (t *throttle) failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens = max(t.tokens-1, 0)
	return t.tokens <= t.max/2
}

// succeeded gives back a share of a token.
func (t *throttle) succeeded() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.tokens = min(t.tokens+t.ratio, t.max)
}
