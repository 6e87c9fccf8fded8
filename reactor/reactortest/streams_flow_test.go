package reactortest_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// waitTimeout bounds the waits of these tests, which return as soon as what they wait for
// happens: it is reached only when the behaviour is broken.
const waitTimeout = 10 * time.Second

// watchStream opens a stream of the server-streaming method at path on b with req and
// opts, and returns it.
func watchStream(t *testing.T, ctx context.Context, b *reactortest.Backend, path string, req *testpb.WatchRequest, opts ...grpc.CallOption) *grpc.GenericClientStream[testpb.WatchRequest, testpb.EchoResponse] {
	t.Helper()
	cs, err := b.NewStream(ctx, &testpb.TestService_ServiceDesc.Streams[0], path, opts...)
	require.NoError(t, err)
	s := &grpc.GenericClientStream[testpb.WatchRequest, testpb.EchoResponse]{ClientStream: cs}
	require.NoError(t, s.SendMsg(req))
	return s
}

// TestStreamFlowControl checks that a handler's send waits while the client has not read the
// stream's window, and goes on as soon as the client reads; that a message larger than the
// window passes alone; and that cancelling the stream ends a send that waits, with Canceled.
func TestStreamFlowControl(t *testing.T) {
	defer goleak.VerifyNone(t)
	const payload = 10000
	size := proto.Size(&testpb.EchoResponse{Message: "w0", Payload: []byte(strings.Repeat("x", payload))}) + 5 // gRPC's prefix
	tests := []struct {
		name   string
		window int // 0: the default
		fits   int // messages sent before a send waits
	}{
		{"default window", 0, reactortest.DefaultStreamWindow / size},
		{"two messages exactly", 2 * size, 2},
		{"one byte short of two", 2*size - 1, 1},
		{"larger than the window: alone", 100, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			f := &fakeStreams{sent: make(chan error, 100), ended: make(chan error, 1)}
			b, _ := streamsBackend(f)
			if tc.window > 0 {
				b.SetStreamWindow(tc.window)
			}
			sctx, stop := context.WithCancel(ctx)
			defer stop()
			s := watchStream(t, sctx, b, testpb.TestService_Watch_FullMethodName, &testpb.WatchRequest{Forever: true, Message: "w", PayloadBytes: payload})

			require.NoError(t, b.WaitStalls(ctx, testpb.TestService_Watch_FullMethodName, 1))
			require.Len(t, f.sent, tc.fits, "messages sent before the first stall")
			for range tc.fits {
				require.NoError(t, <-f.sent)
			}
			resp, err := s.Recv()
			require.NoError(t, err)
			require.Equal(t, "w0", resp.GetMessage())
			require.NoError(t, <-f.sent, "a read lets the waiting send go")
			require.NoError(t, b.WaitStalls(ctx, testpb.TestService_Watch_FullMethodName, 2))
			require.Empty(t, f.sent, "the next send waits again")

			stop()
			require.Equal(t, codes.Canceled, status.Code(<-f.sent), "cancelling ends a waiting send")
			require.Equal(t, codes.Canceled, status.Code(<-f.ended))
			got, err := recvAll(s)
			require.Equal(t, codes.Canceled, status.Code(err), "%v", err)
			require.LessOrEqual(t, len(got), tc.fits, "what was sent before the cancel, at most")
			require.Equal(t, 2, b.Stalls(testpb.TestService_Watch_FullMethodName))
		})
	}
}

// TestStreamWaitStallsContext checks that WaitStalls gives up when its context is done,
// saying how many stalls there were.
func TestStreamWaitStallsContext(t *testing.T) {
	b := reactortest.NewBackend()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := b.WaitStalls(ctx, "/a.B/C", 1)
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorContains(t, err, "0 stalls")
}

// TestStreamCancel checks that cancelling a stream ends its handler's context, with
// context.Canceled, and a receive that waits, and that the client's RecvMsg returns Canceled.
func TestStreamCancel(t *testing.T) {
	defer goleak.VerifyNone(t)
	const path = "/prpctest.Funcs/Chat"
	tests := []struct {
		name string
		// handler waits in the stream as the case says, and returns the error that ended
		// its wait.
		handler func(ctx context.Context, recv func() (*testpb.EchoRequest, error), send func(*testpb.EchoResponse) error) error
	}{
		{"waiting in recv", func(_ context.Context, recv func() (*testpb.EchoRequest, error), _ func(*testpb.EchoResponse) error) error {
			_, err := recv()
			return err
		}},
		{"waiting in send", func(_ context.Context, _ func() (*testpb.EchoRequest, error), send func(*testpb.EchoResponse) error) error {
			for {
				if err := send(&testpb.EchoResponse{Message: "x"}); err != nil {
					return err
				}
			}
		}},
		{"waiting on its context", func(ctx context.Context, _ func() (*testpb.EchoRequest, error), _ func(*testpb.EchoResponse) error) error {
			<-ctx.Done()
			return status.FromContextError(ctx.Err()).Err()
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			b.SetStreamWindow(1)
			started, ended := make(chan struct{}), make(chan [2]error, 1)
			reactortest.HandleBidi(b, calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse](path), func(ctx context.Context, recv func() (*testpb.EchoRequest, error), send func(*testpb.EchoResponse) error) error {
				close(started)
				err := tc.handler(ctx, recv, send)
				ended <- [2]error{err, ctx.Err()}
				return err
			})
			ctx, cancel := context.WithCancel(context.Background())
			cs, err := b.NewStream(ctx, &testpb.TestService_ServiceDesc.Streams[1], path)
			require.NoError(t, err)
			<-started
			cancel()
			got := <-ended
			require.Equal(t, codes.Canceled, status.Code(got[0]), "%v", got[0])
			require.Equal(t, context.Canceled, got[1])
			var err2 error
			for err2 == nil {
				err2 = cs.RecvMsg(&testpb.EchoResponse{})
			}
			require.Equal(t, codes.Canceled, status.Code(err2), "%v", err2)
		})
	}
}

// TestStreamHeaderTrailer checks that the client's Header returns the header as soon as the
// handler sends it, by grpc.SendHeader or with its first message, or with its status when it
// set one, and nil when it sent none; that Trailer is nil until the end and then the handler's;
// and that the handler sees the call's metadata, as Backend says, and its method.
func TestStreamHeaderTrailer(t *testing.T) {
	defer goleak.VerifyNone(t)
	const path = "/prpctest.Funcs/Watch"
	h := metadata.Pairs("h", "1")
	tests := []struct {
		name string
		// before runs in the handler before the test reads the header; then the handler
		// waits until the test has read it, sets the trailer and returns ret.
		before     func(ctx context.Context, send func(*testpb.EchoResponse) error) error
		ret        error
		early      bool // the header goes out before the end
		wantHeader metadata.MD
		wantErr    codes.Code
	}{
		{"SendHeader", func(ctx context.Context, _ func(*testpb.EchoResponse) error) error {
			return grpc.SendHeader(ctx, h)
		}, nil, true, h, codes.OK},
		{"SetHeader, with the first message", func(ctx context.Context, send func(*testpb.EchoResponse) error) error {
			if err := grpc.SetHeader(ctx, h); err != nil {
				return err
			}
			if err := send(&testpb.EchoResponse{}); err != nil {
				return err
			}
			if err := grpc.SetHeader(ctx, metadata.Pairs("late", "1")); err == nil {
				return fmt.Errorf("SetHeader after the header went out succeeded")
			}
			return nil
		}, nil, true, h, codes.OK},
		{"no header, a message", func(context.Context, func(*testpb.EchoResponse) error) error { return nil }, nil, true, metadata.MD{}, codes.OK},
		{"SetHeader, then an error", func(ctx context.Context, _ func(*testpb.EchoResponse) error) error {
			return grpc.SetHeader(ctx, h)
		}, status.Error(codes.NotFound, "x"), false, h, codes.NotFound},
		{"none, OK", func(context.Context, func(*testpb.EchoResponse) error) error { return nil }, nil, false, nil, codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			proceed := make(chan struct{})
			var seen metadata.MD
			var method string
			reactortest.HandleStream(b, calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse](path), func(ctx context.Context, _ *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
				seen, _ = metadata.FromIncomingContext(ctx)
				method, _ = grpc.Method(ctx)
				if err := tc.before(ctx, send); err != nil {
					return err
				}
				if tc.name == "no header, a message" {
					if err := send(&testpb.EchoResponse{}); err != nil {
						return err
					}
				}
				<-proceed
				if err := grpc.SetTrailer(ctx, metadata.Pairs("t", "1")); err != nil {
					return err
				}
				return tc.ret
			})
			ctx, cancel := context.WithTimeout(metadata.AppendToOutgoingContext(context.Background(), "k", "v"), waitTimeout)
			defer cancel()
			cs, err := b.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, path)
			require.NoError(t, err)
			require.NoError(t, cs.SendMsg(&testpb.WatchRequest{}))
			if tc.early { // the handler waits for proceed meanwhile
				got, err := cs.Header()
				require.NoError(t, err)
				require.Equal(t, tc.wantHeader, got)
				require.Nil(t, cs.Trailer(), "no trailer before the end")
			}
			close(proceed)
			for err == nil {
				err = cs.RecvMsg(&testpb.EchoResponse{})
			}
			if tc.wantErr == codes.OK {
				require.Equal(t, io.EOF, err)
			} else {
				require.Equal(t, tc.wantErr, status.Code(err))
			}
			got, err := cs.Header()
			require.NoError(t, err)
			require.Equal(t, tc.wantHeader, got)
			require.Equal(t, metadata.Pairs("t", "1"), cs.Trailer())
			require.Equal(t, path, method)
			require.Equal(t, []string{"v"}, seen["k"])
			require.Equal(t, []string{reactortest.Authority}, seen[":authority"])
			require.Equal(t, []string{"application/grpc"}, seen["content-type"])
			require.Len(t, seen["user-agent"], 1)
		})
	}
}

// TestStreamSendHeaderTwice checks that a handler's second SendHeader fails, as on a server.
func TestStreamSendHeaderTwice(t *testing.T) {
	defer goleak.VerifyNone(t)
	const path = "/prpctest.Funcs/Watch"
	b := reactortest.NewBackend()
	reactortest.HandleStream(b, calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse](path), func(ctx context.Context, _ *testpb.WatchRequest, _ func(*testpb.EchoResponse) error) error {
		if err := grpc.SendHeader(ctx, metadata.Pairs("a", "1")); err != nil {
			return err
		}
		return grpc.SendHeader(ctx, metadata.Pairs("b", "1"))
	})
	s := watchStream(t, context.Background(), b, path, &testpb.WatchRequest{})
	_, err := s.Recv()
	require.Equal(t, codes.Internal, status.Code(err), "%v", err)
	md, _ := s.Header()
	require.Equal(t, metadata.Pairs("a", "1"), md)
}

// TestStreamRecvLimit checks that a response above the call's receive limit fails the stream
// with ResourceExhausted, as grpc-go does, and cancels the handler's context; one at the limit
// passes.
func TestStreamRecvLimit(t *testing.T) {
	defer goleak.VerifyNone(t)
	size := proto.Size(&testpb.EchoResponse{Message: "w0", Payload: []byte(strings.Repeat("x", 200))})
	tests := []struct {
		name  string
		limit int
		want  codes.Code
	}{
		{"above", size - 1, codes.ResourceExhausted},
		{"at the limit", size, codes.OK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStreams{ended: make(chan error, 1)}
			b, _ := streamsBackend(f)
			b.SetStreamWindow(1)
			// Above the limit, the handler sends until its send fails.
			req := &testpb.WatchRequest{Count: 2, Forever: tc.want != codes.OK, Message: "w", PayloadBytes: 200}
			s := watchStream(t, context.Background(), b, testpb.TestService_Watch_FullMethodName, req, grpc.MaxCallRecvMsgSize(tc.limit))
			resp, err := s.Recv()
			if tc.want == codes.OK {
				require.NoError(t, err)
				require.Equal(t, "w0", resp.GetMessage())
				got, err := recvAll(s)
				require.Len(t, got, 1)
				require.Equal(t, io.EOF, err)
				require.NoError(t, <-f.ended)
				return
			}
			require.Equal(t, tc.want, status.Code(err))
			require.Equal(t, fmt.Sprintf("grpc: received message larger than max (%d vs. %d)", size, tc.limit), status.Convert(err).Message())
			require.Equal(t, codes.Canceled, status.Code(<-f.ended), "the handler's send fails: its context is cancelled")
			_, again := s.Recv()
			require.Equal(t, err, again)
		})
	}
}

// TestStreamHandlerPanics checks that a handler's panic is raised again by the client's
// RecvMsg that reaches the stream's end, after the messages sent before it, as a unary
// handler's is on the lane; the stream is then finished with Internal.
func TestStreamHandlerPanics(t *testing.T) {
	defer goleak.VerifyNone(t)
	const path = "/prpctest.Funcs/Watch"
	b := reactortest.NewBackend()
	reactortest.HandleStream(b, calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse](path), func(_ context.Context, _ *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
		if err := send(&testpb.EchoResponse{Message: "before"}); err != nil {
			return err
		}
		panic("boom")
	})
	s := watchStream(t, context.Background(), b, path, &testpb.WatchRequest{})
	resp, err := s.Recv()
	require.NoError(t, err)
	require.Equal(t, "before", resp.GetMessage())
	require.PanicsWithValue(t, "boom", func() { _, _ = s.Recv() })
	_, err = s.Recv()
	require.Equal(t, codes.Internal, status.Code(err))
	require.ErrorContains(t, err, "boom")
}

// TestStreamWindowRefused checks that SetStreamWindow refuses a window that holds nothing.
func TestStreamWindowRefused(t *testing.T) {
	require.Panics(t, func() { reactortest.NewBackend().SetStreamWindow(0) })
}
