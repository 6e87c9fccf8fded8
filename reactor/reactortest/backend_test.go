package reactortest_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

var echo = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

func TestBackend(t *testing.T) {
	tests := []struct {
		name    string
		handler func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)
		opts    *calls.Options
		limits  limits.Limits
		check   func(t *testing.T, resp *testpb.EchoResponse, err error, p *calls.Promise[*testpb.EchoResponse])
	}{
		{
			name: "response",
			handler: func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return &testpb.EchoResponse{Message: "re: " + req.GetMessage()}, nil
			},
			check: func(t *testing.T, resp *testpb.EchoResponse, err error, _ *calls.Promise[*testpb.EchoResponse]) {
				require.NoError(t, err)
				require.Equal(t, "re: hi", resp.GetMessage())
			},
		},
		{
			name: "status error keeps its code",
			handler: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return nil, status.Error(codes.NotFound, "no such player")
			},
			check: func(t *testing.T, _ *testpb.EchoResponse, err error, _ *calls.Promise[*testpb.EchoResponse]) {
				require.Equal(t, codes.NotFound, status.Code(err))
			},
		},
		{
			name: "context error keeps its code, as on a grpc.Server",
			handler: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return nil, fmt.Errorf("database: %w", context.DeadlineExceeded)
			},
			check: func(t *testing.T, _ *testpb.EchoResponse, err error, _ *calls.Promise[*testpb.EchoResponse]) {
				require.Equal(t, codes.DeadlineExceeded, status.Code(err))
			},
		},
		{
			name: "plain error is Unknown",
			handler: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return nil, errors.New("boom")
			},
			check: func(t *testing.T, _ *testpb.EchoResponse, err error, _ *calls.Promise[*testpb.EchoResponse]) {
				require.Equal(t, codes.Unknown, status.Code(err))
			},
		},
		{
			name: "metadata in, headers and trailers out",
			handler: func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				if err := grpc.SetHeader(ctx, metadata.Pairs("x-h", "1")); err != nil {
					return nil, err
				}
				if err := grpc.SetTrailer(ctx, metadata.Pairs("x-t", "2")); err != nil {
					return nil, err
				}
				return &testpb.EchoResponse{Message: md.Get("server-id")[0]}, nil
			},
			opts: &calls.Options{Metadata: metadata.MD{"Server-ID": {"lobby"}}, ResponseMetadata: true},
			check: func(t *testing.T, resp *testpb.EchoResponse, err error, p *calls.Promise[*testpb.EchoResponse]) {
				require.NoError(t, err)
				require.Equal(t, "lobby", resp.GetMessage())
				require.Equal(t, []string{"1"}, p.Header().Get("x-h"))
				require.Equal(t, []string{"2"}, p.Trailer().Get("x-t"))
			},
		},
		{
			name: "a panic fails the call with Internal",
			handler: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				panic("handler broke")
			},
			check: func(t *testing.T, _ *testpb.EchoResponse, err error, _ *calls.Promise[*testpb.EchoResponse]) {
				require.Equal(t, codes.Internal, status.Code(err))
				require.Contains(t, status.Convert(err).Message(), "handler broke")
			},
		},
		{
			name: "response over the limit",
			handler: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return &testpb.EchoResponse{Payload: make([]byte, 2048)}, nil
			},
			limits: limits.Limits{MaxResponseBytes: 1024},
			check: func(t *testing.T, _ *testpb.EchoResponse, err error, _ *calls.Promise[*testpb.EchoResponse]) {
				require.ErrorIs(t, err, calls.ErrTooLarge)
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			reactortest.Handle(b, echo, tc.handler)
			r := reactortest.NewReactor(t, b, reactor.Config{Limits: tc.limits, Logger: slog.New(slog.DiscardHandler)})
			var resp *testpb.EchoResponse
			var gotErr error
			p := reactor.Call(r, echo, &testpb.EchoRequest{Message: "hi"}, tc.opts)
			p.Then(func(x *testpb.EchoResponse) { resp = x }).OnError(func(err error) { gotErr = err })
			reactortest.Flush(t, r)
			require.NotEqual(t, calls.Pending, p.State())
			tc.check(t, resp, gotErr, p)
			require.Equal(t, 1, b.Calls(echo.Path()))
		})
	}
}

func TestBackendUnregistered(t *testing.T) {
	b := reactortest.NewBackend()
	r := reactortest.NewReactor(t, b, reactor.Config{})
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	reactortest.Flush(t, r)
	require.Equal(t, codes.Unimplemented, status.Code(p.Err()))
}

// A handler that waits for its context settles with ErrTimeout when the manual clock passes
// the deadline: no real time passes (the native deadline is far away in real time).
func TestBackendManualClockTimeout(t *testing.T) {
	clock := reactortest.NewManualClock(time.Unix(1_700_000_000, 0))
	b := reactortest.NewBackend()
	entered := make(chan struct{})
	reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		close(entered)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: clock, MaxTimeout: time.Hour, DefaultTimeout: 30 * time.Minute})
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	<-entered
	clock.Advance(30 * time.Minute)
	reactortest.Flush(t, r)
	require.ErrorIs(t, p.Err(), calls.ErrTimeout)
}
