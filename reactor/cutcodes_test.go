package reactor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/reactor"
)

// endCodes is a gRPC stats handler that records the code of every call's end, as otelgrpc
// records a span's status.
type endCodes struct {
	mu    sync.Mutex
	codes []codes.Code
}

func (h *endCodes) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (h *endCodes) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (h *endCodes) HandleConn(context.Context, stats.ConnStats) {}
func (h *endCodes) HandleRPC(_ context.Context, s stats.RPCStats) {
	if end, ok := s.(*stats.End); ok {
		h.mu.Lock()
		h.codes = append(h.codes, status.Code(end.Error))
		h.mu.Unlock()
	}
}

func (h *endCodes) seen() []codes.Code {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]codes.Code(nil), h.codes...)
}

// TestCutCallCodes checks that a call the reactor cuts while the server works on it ends with
// the same code everywhere: DeadlineExceeded for its deadline or its parent context's, and
// Canceled for Promise.Cancel, a cancelled parent context and Close, for the caller, for
// gRPC's interceptors and stats handlers, and in Stats (Failed, the method's Failed and the
// backend's Failed); and that the server still sees the call's deadline and its cancellation.
func TestCutCallCodes(t *testing.T) {
	// The call's timeout (or its parent's) is far below the handler's hold, which only the
	// call's end releases; bound covers the rest on a busy machine.
	const short = 100 * time.Millisecond
	cases := []struct {
		name string
		// cut submits the held call and cuts it; it returns the promise.
		cut  func(t *testing.T, h *host, r *reactor.Reactor, g *gate) *call
		want codes.Code
	}{
		{"deadline", func(t *testing.T, h *host, _ *reactor.Reactor, _ *gate) *call {
			return h.submit(echo, held("x"), &calls.Options{Timeout: short})
		}, codes.DeadlineExceeded},
		{"parent deadline", func(t *testing.T, h *host, _ *reactor.Reactor, _ *gate) *call {
			ctx, cancel := context.WithTimeout(context.Background(), short)
			t.Cleanup(cancel)
			return h.submit(echo, held("x"), &calls.Options{Context: ctx})
		}, codes.DeadlineExceeded},
		{"Promise.Cancel", func(t *testing.T, h *host, _ *reactor.Reactor, g *gate) *call {
			c := h.submit(echo, held("x"), nil)
			recv(t, g.entered, "the held call at the server")
			c.p.Cancel()
			return c
		}, codes.Canceled},
		{"parent cancelled", func(t *testing.T, h *host, _ *reactor.Reactor, g *gate) *call {
			ctx, cancel := context.WithCancel(context.Background())
			c := h.submit(echo, held("x"), &calls.Options{Context: ctx})
			recv(t, g.entered, "the held call at the server")
			cancel()
			return c
		}, codes.Canceled},
		{"Close", func(t *testing.T, h *host, _ *reactor.Reactor, g *gate) *call {
			c := h.submit(echo, held("x"), nil)
			recv(t, g.entered, "the held call at the server")
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Close cuts what runs at once
			require.Error(t, h.Close(ctx))
			return c
		}, codes.Canceled},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ends := &endCodes{}
			intercepted := codes.Code(999) // none yet
			var interceptedMu sync.Mutex
			interceptor := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				err := invoker(ctx, method, req, reply, cc, opts...)
				interceptedMu.Lock()
				intercepted = status.Code(err)
				interceptedMu.Unlock()
				return err
			}
			r, g, h := startGated(t, reactor.Config{DialOptions: []grpc.DialOption{
				grpc.WithStatsHandler(ends), grpc.WithUnaryInterceptor(interceptor),
			}})
			serverDeadline := make(chan bool, 1)
			g.setOnEnter(func(ctx context.Context) { _, ok := ctx.Deadline(); serverDeadline <- ok })
			c := tc.cut(t, h, r, g)
			h.settle(c)
			require.Equal(t, tc.want, status.Code(c.err), "the caller's code: %v", c.err)
			require.Eventually(t, func() bool { return g.cancelled.Load() == 1 }, bound, poll,
				"the server saw the call's cancellation")
			require.True(t, recv(t, serverDeadline, "the held call at the server"), "the server saw no deadline")
			require.Eventually(t, func() bool { return len(ends.seen()) == 1 }, bound, poll)
			require.Equal(t, []codes.Code{tc.want}, ends.seen(), "the stats handler's code")
			interceptedMu.Lock()
			require.Equal(t, tc.want, intercepted, "the interceptor's code")
			interceptedMu.Unlock()
			s := r.Stats()
			require.Equal(t, map[codes.Code]uint64{tc.want: 1}, s.Failed, "Stats.Failed")
			require.Equal(t, map[codes.Code]uint64{tc.want: 1}, s.Methods[echo.Path()].Failed, "the method's Failed")
			require.Len(t, s.Backends, 1)
			require.Equal(t, map[codes.Code]uint64{tc.want: 1}, s.Backends[0].Failed, "the backend's Failed")
		})
	}
}
