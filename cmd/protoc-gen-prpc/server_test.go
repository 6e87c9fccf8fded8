package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testpb/testpbprpc"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestGeneratedClientAgainstServer calls a real grpc-go server on loopback through the client
// protoc-gen-prpc generated for internal/testpb: the request, its metadata and the response
// cross the network, and a server's error keeps its code.
func TestGeneratedClientAgainstServer(t *testing.T) {
	srv := testserver.Start(t)
	r, err := reactor.New(reactor.Config{
		Target:      srv.Addr(),
		Credentials: reactor.Insecure(),
		Methods:     testpbprpc.TestServiceMethods(),
		Policies:    testpbprpc.TestServicePolicies(),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})

	client := testpbprpc.NewTestServiceClient(r)
	var echoed *testpb.EchoResponse
	var failure error
	// The longest timeout the reactor allows by default (MaxTimeout).
	opts := &calls.Options{Timeout: 5 * time.Second, Metadata: metadata.Pairs("x-player", "steve")}
	client.Echo(&testpb.EchoRequest{Message: "hello"}, opts).
		Then(func(resp *testpb.EchoResponse) { echoed = resp }).
		OnError(func(err error) { t.Errorf("Echo: %v", err) })
	client.Echo(&testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, opts).
		OnError(func(err error) { failure = err })
	reactortest.Flush(t, r)

	require.Equal(t, "hello", echoed.GetMessage())
	require.Equal(t, "steve", echoed.GetMetadata()["x-player"])
	require.Equal(t, codes.NotFound, status.Code(failure))
	require.Equal(t, int64(2), srv.Calls())
}

// TestGeneratedStreamsAgainstServer opens streams through the stream methods protoc-gen-prpc
// generated for internal/testpb, against a real grpc-go server on loopback, with the generated
// method list as the reactor's allowlist: each message runs OnMessage inside Tick, on the
// goroutine that ticks, in the order sent, and the end runs OnEnd once, last, with the
// server's status or the cancel's error.
func TestGeneratedStreamsAgainstServer(t *testing.T) {
	srv := testserver.Start(t)
	r, err := reactor.New(reactor.Config{
		Target:      srv.Addr(),
		Credentials: reactor.Insecure(),
		Methods:     testpbprpc.TestServiceMethods(),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	client := testpbprpc.NewTestServiceClient(r)

	// handler is what a case's stream runs; open returns the stream's Cancel.
	type handler struct {
		onMessage func(*testpb.EchoResponse)
		onEnd     func(error)
	}
	for _, tc := range []struct {
		name     string
		open     func(h handler) (cancel func())
		cancelAt int // cancel the stream in the OnMessage of this message (1-based); 0: never
		want     []string
		code     codes.Code
		wantErr  error
	}{
		{
			name: "Watch to its end",
			open: func(h handler) func() {
				s := client.Watch(&testpb.WatchRequest{Count: 3, Message: "m"}, nil,
					calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{OnMessage: h.onMessage, OnEnd: h.onEnd})
				return s.Cancel
			},
			want: []string{"m0", "m1", "m2"},
		},
		{
			name: "Watch ended by the server's status",
			open: func(h handler) func() {
				s := client.Watch(&testpb.WatchRequest{Count: 2, Message: "m", Start: 5, FailCode: int32(codes.NotFound), FailMessage: "gone"}, nil,
					calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{OnMessage: h.onMessage, OnEnd: h.onEnd})
				return s.Cancel
			},
			want: []string{"m5", "m6"},
			code: codes.NotFound,
		},
		{
			name: "Watch cancelled from OnMessage",
			open: func(h handler) func() {
				s := client.Watch(&testpb.WatchRequest{Forever: true, Message: "f"}, &calls.StreamOptions{MaxWaiting: 1},
					calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{OnMessage: h.onMessage, OnEnd: h.onEnd})
				return s.Cancel
			},
			cancelAt: 2,
			want:     []string{"f0", "f1"},
			code:     codes.Canceled,
			wantErr:  calls.ErrCancelled,
		},
		{
			name: "Chat echoes what it is sent",
			open: func(h handler) func() {
				s := client.Chat(nil, calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{OnMessage: h.onMessage, OnEnd: h.onEnd})
				for _, m := range []string{"a", "b", "c"} {
					require.NoError(t, s.Send(&testpb.EchoRequest{Message: m}))
				}
				require.NoError(t, s.CloseSend())
				return s.Cancel
			},
			want: []string{"a", "b", "c"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inTick := false // set by this goroutine around each Tick
			var got []string
			var ends int
			var endErr error
			var cancel func()
			cancel = tc.open(handler{
				onMessage: func(m *testpb.EchoResponse) {
					require.True(t, inTick, "OnMessage outside Tick")
					require.Zero(t, ends, "OnMessage after OnEnd")
					got = append(got, m.GetMessage())
					if len(got) == tc.cancelAt {
						cancel()
					}
				},
				onEnd: func(err error) {
					require.True(t, inTick, "OnEnd outside Tick")
					ends++
					endErr = err
				},
			})
			tickUntil(t, r, &inTick, func() bool { return ends > 0 })
			require.Equal(t, tc.want, got)
			require.Equal(t, 1, ends)
			require.Equal(t, tc.code, status.Code(endErr), "end: %v", endErr)
			if tc.wantErr != nil {
				require.ErrorIs(t, endErr, tc.wantErr)
			}
		})
	}
}

// tickUntil ticks r on the calling goroutine, with *inTick true during each Tick and woken by
// Ready between them, until done, which it asks after each Tick, reports true; it fails the
// test after reactortest.FlushTimeout.
func tickUntil(t *testing.T, r *reactor.Reactor, inTick *bool, done func() bool) {
	t.Helper()
	deadline := time.NewTimer(reactortest.FlushTimeout)
	defer deadline.Stop()
	for {
		*inTick = true
		r.Tick(time.Hour)
		*inTick = false
		if done() {
			return
		}
		select {
		case <-r.Ready():
		case <-deadline.C:
			t.Fatalf("not done after %v", reactortest.FlushTimeout)
		}
	}
}
