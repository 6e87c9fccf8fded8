package testserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// dial returns a TestService client for s, closed when the test ends.
func dial(t *testing.T, s *testserver.Server) testpb.TestServiceClient {
	t.Helper()
	conn, err := grpc.NewClient(s.Addr(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 10 * time.Millisecond, Multiplier: 1.6, MaxDelay: 100 * time.Millisecond},
			MinConnectTimeout: time.Second,
		}),
	)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	return testpb.NewTestServiceClient(conn)
}

func ctxWithTimeout(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

func TestServer(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient)
	}{
		{
			name: "echo",
			run: func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient) {
				ctx := metadata.AppendToOutgoingContext(ctxWithTimeout(t, 5*time.Second), "x-test", "v1", "x-test", "v2")
				resp, err := c.Echo(ctx, &testpb.EchoRequest{Message: "hi", Payload: []byte("abc")})
				require.NoError(t, err)
				require.Equal(t, "hi", resp.GetMessage())
				require.Equal(t, []byte("abc"), resp.GetPayload())
				require.Equal(t, "v1", resp.GetMetadata()["x-test"])
				for k := range resp.GetMetadata() {
					require.NotEqual(t, ':', k[0], "pseudo-header %q leaked", k)
				}
				require.Equal(t, []string{"v1", "v2"}, s.LastMetadata().Get("x-test"))
				require.EqualValues(t, 1, s.Calls())

				resp, err = c.Echo(ctx, &testpb.EchoRequest{Payload: []byte("abc"), ResponseBytes: 5})
				require.NoError(t, err)
				require.Equal(t, []byte("xxxxx"), resp.GetPayload())
				require.EqualValues(t, 2, s.Calls())
			},
		},
		{
			name: "delay honoured",
			run: func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient) {
				start := time.Now()
				_, err := c.Echo(ctxWithTimeout(t, 5*time.Second), &testpb.EchoRequest{DelayMs: 100})
				require.NoError(t, err)
				require.GreaterOrEqual(t, time.Since(start), 100*time.Millisecond)
				require.Zero(t, s.CancelledCount())
			},
		},
		{
			name: "client deadline cancels blocked handler",
			run: func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient) {
				_, err := c.Echo(ctxWithTimeout(t, 50*time.Millisecond), &testpb.EchoRequest{Block: true})
				require.Equal(t, codes.DeadlineExceeded, status.Code(err), "err: %v", err)
				select {
				case <-s.Cancelled():
				case <-time.After(2 * time.Second):
					t.Fatal("handler did not observe cancellation")
				}
				require.EqualValues(t, 1, s.CancelledCount())
				require.EqualValues(t, 1, s.Calls())
			},
		},
		{
			name: "non-standard fail code passes through",
			run: func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient) {
				var tr metadata.MD
				_, err := c.Echo(ctxWithTimeout(t, 5*time.Second),
					&testpb.EchoRequest{FailCode: 99, FailMessage: "boom"}, grpc.Trailer(&tr))
				st, ok := status.FromError(err)
				require.True(t, ok, "err: %v", err)
				require.Equal(t, codes.Code(99), st.Code())
				require.Equal(t, "boom", st.Message())
				require.Equal(t, []string{testserver.TrailerValue}, tr.Get(testserver.TrailerKey))
			},
		},
		{
			name: "headers and trailers",
			run: func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient) {
				var hdr, tr metadata.MD
				_, err := c.Echo(ctxWithTimeout(t, 5*time.Second), &testpb.EchoRequest{Message: "m"},
					grpc.Header(&hdr), grpc.Trailer(&tr))
				require.NoError(t, err)
				require.Equal(t, []string{"echo"}, hdr.Get("x-handler"))
				require.Equal(t, []string{"done"}, tr.Get("x-trailer"))
			},
		},
		{
			name: "custom handler",
			run: func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient) {
				s.SetHandler(func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
					return &testpb.EchoResponse{Message: "custom"}, nil
				})
				resp, err := c.Echo(ctxWithTimeout(t, 5*time.Second), &testpb.EchoRequest{Message: "m"})
				require.NoError(t, err)
				require.Equal(t, "custom", resp.GetMessage())

				s.SetHandler(nil)
				resp, err = c.Echo(ctxWithTimeout(t, 5*time.Second), &testpb.EchoRequest{Message: "m"})
				require.NoError(t, err)
				require.Equal(t, "m", resp.GetMessage())
				require.EqualValues(t, 2, s.Calls())
			},
		},
		{
			name: "restart on same port",
			run: func(t *testing.T, s *testserver.Server, c testpb.TestServiceClient) {
				addr := s.Addr()
				_, err := c.Echo(ctxWithTimeout(t, 5*time.Second), &testpb.EchoRequest{Message: "before"})
				require.NoError(t, err)

				s.Stop()
				s.Stop() // idempotent
				_, err = c.Echo(ctxWithTimeout(t, 5*time.Second), &testpb.EchoRequest{Message: "down"})
				require.Equal(t, codes.Unavailable, status.Code(err), "err: %v", err)

				s.Restart(t)
				require.Equal(t, addr, s.Addr())
				resp, err := c.Echo(ctxWithTimeout(t, 5*time.Second), &testpb.EchoRequest{Message: "after"}, grpc.WaitForReady(true))
				require.NoError(t, err)
				require.Equal(t, "after", resp.GetMessage())
				require.EqualValues(t, 2, s.Calls())

				s.GracefulStop() // before the automatic cleanup
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testserver.Start(t)
			tc.run(t, s, dial(t, s))
		})
	}
}
