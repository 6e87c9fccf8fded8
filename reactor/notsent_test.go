package reactor_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
)

// TestErrorSaysWhetherSent checks calls.Error.NotSent on every path a call fails by: true
// where the request never left prpc and gRPC, false where it may have reached the server. The
// reactor has one lane, and a call held at the server keeps it busy, so that the next calls
// wait in prpc's queue.
func TestErrorSaysWhetherSent(t *testing.T) {
	const short = 100 * time.Millisecond // far below the hold, which only the call's end releases
	cases := []struct {
		name     string
		fail     func(t *testing.T, h *host, g *gate) *call // submits the call and fails it
		wantKind error
		notSent  bool
	}{
		{"overloaded", func(t *testing.T, h *host, g *gate) *call {
			h.submit(echo, held("busy"), nil)
			h.submit(echo, held("queued"), nil)
			return h.submit(echo, held("over"), nil) // MaxOutstanding is 2
		}, calls.ErrOverloaded, true},
		{"invalid at submission", func(t *testing.T, h *host, g *gate) *call {
			return h.submit(echo, echoReq("x"), &calls.Options{Timeout: -time.Second})
		}, calls.ErrInvalidArgument, true},
		{"timeout while queued", func(t *testing.T, h *host, g *gate) *call {
			h.submit(echo, held("busy"), nil)
			g.waitEntered(t, 1)
			return h.submit(echo, echoReq("x"), &calls.Options{Timeout: short})
		}, calls.ErrTimeout, true},
		{"timeout in flight", func(t *testing.T, h *host, g *gate) *call {
			return h.submit(echo, held("x"), &calls.Options{Timeout: short})
		}, calls.ErrTimeout, false},
		{"cancelled while queued", func(t *testing.T, h *host, g *gate) *call {
			h.submit(echo, held("busy"), nil)
			g.waitEntered(t, 1)
			c := h.submit(echo, echoReq("x"), nil)
			c.p.Cancel()
			return c
		}, calls.ErrCancelled, true},
		{"cancelled in flight", func(t *testing.T, h *host, g *gate) *call {
			c := h.submit(echo, held("x"), nil)
			g.waitEntered(t, 1)
			c.p.Cancel()
			return c
		}, calls.ErrCancelled, false},
		{"closed while queued", func(t *testing.T, h *host, g *gate) *call {
			h.submit(echo, held("busy"), nil)
			g.waitEntered(t, 1)
			c := h.submit(echo, echoReq("x"), nil)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			require.Error(t, h.Close(ctx))
			return c
		}, calls.ErrClosed, true},
		{"closed in flight", func(t *testing.T, h *host, g *gate) *call {
			c := h.submit(echo, held("x"), nil)
			g.waitEntered(t, 1)
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			require.Error(t, h.Close(ctx))
			return c
		}, calls.ErrClosed, false},
		{"closed before submission", func(t *testing.T, h *host, g *gate) *call {
			require.NoError(t, h.Close(context.Background()))
			return h.submit(echo, echoReq("x"), nil)
		}, calls.ErrClosed, true},
		{"request too large", func(t *testing.T, h *host, g *gate) *call {
			return h.submit(echo, echoReq(strings.Repeat("x", 2048)), nil) // MaxRequestBytes is 1024
		}, calls.ErrTooLarge, true},
		{"server status", func(t *testing.T, h *host, g *gate) *call {
			return h.submit(echo, &testpb.EchoRequest{Message: "x", FailCode: int32(codes.Unavailable)}, nil)
		}, calls.ErrUnavailable, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 1, MaxOutstanding: 2,
				Limits: limits.Limits{MaxRequestBytes: 1024}})
			c := tc.fail(t, h, g)
			h.settle(c)
			requireNotSent(t, c.err, tc.wantKind, tc.notSent)
		})
	}
}

// TestErrorNotSentWithoutBackend checks that a call gRPC fails before it has a stream to a
// backend (nothing listens at the address) is NotSent on a connection prpc dialled, and may
// have been sent for a method gRPC retries, whose earlier attempts prpc does not see.
func TestErrorNotSentWithoutBackend(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // connection refused from now on
	for _, idempotent := range []bool{false, true} {
		cfg := reactor.Config{Target: addr}
		if idempotent {
			cfg.Policies = []reactor.MethodPolicy{{Method: echo, Idempotent: true}}
		}
		h := newHost(t, newReactor(t, nil, cfg))
		c := h.submit(echo, echoReq("x"), nil)
		h.settle(c)
		requireNotSent(t, c.err, calls.ErrUnavailable, !idempotent)
	}
}

// requireNotSent checks that err is a *calls.Error matching kind whose NotSent is want.
func requireNotSent(t *testing.T, err error, kind error, want bool) {
	t.Helper()
	require.ErrorIs(t, err, kind)
	var ce *calls.Error
	require.True(t, errors.As(err, &ce), "%T is not a *calls.Error", err)
	require.Equal(t, want, ce.NotSent(), "NotSent of %v (code %v)", err, status.Code(err))
}
