package reactor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// forever is a Watch that sends a message every millisecond until cancelled.
func forever() *testpb.WatchRequest {
	return &testpb.WatchRequest{Forever: true, IntervalMs: 1, Message: "m"}
}

// TestWatchCancel: Cancel ends a stream with ErrCancelled, once, after which no OnMessage
// runs; NotSent only if the stream never reached a server.
func TestWatchCancel(t *testing.T) {
	t.Run("before open", func(t *testing.T) {
		srv := testserver.Start(t)
		addr := srv.Addr()
		srv.Stop()
		r := newStreamReactor(t, addr, reactor.Config{Backoff: fastBackoff})
		var l streamLog
		s := reactor.Watch(r, watch, forever(), &calls.StreamOptions{WaitForReady: true}, l.watchHandler())
		s.Cancel()
		waitFor(t, r, l.ended)
		l.checkEnd(t)
		require.ErrorIs(t, l.err, calls.ErrCancelled)
		var ce *calls.Error
		require.True(t, errors.As(l.err, &ce) && ce.NotSent(), "%v", l.err)
	})
	t.Run("mid-stream from OnMessage", func(t *testing.T) {
		srv := testserver.Start(t)
		r := newStreamReactor(t, srv.Addr(), reactor.Config{})
		var l streamLog
		var s *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse]
		cancelledAt := -1
		l.onMsg = func(*testpb.EchoResponse) {
			if len(l.msgs) == 3 {
				s.Cancel()
				cancelledAt = len(l.msgs)
			}
		}
		s = reactor.Watch(r, watch, forever(), &calls.StreamOptions{MaxWaiting: 8}, l.watchHandler())
		waitFor(t, r, l.ended)
		l.checkEnd(t)
		require.Equal(t, 3, cancelledAt)
		require.Equal(t, seq("m", 0, 3), l.msgs, "no OnMessage after Cancel returned on the host")
		require.ErrorIs(t, l.err, calls.ErrCancelled)
		var ce *calls.Error
		require.True(t, errors.As(l.err, &ce) && !ce.NotSent())
		s.Cancel() // again: nothing
		r.Tick(time.Second)
		require.Equal(t, 1, l.ends)
	})
	t.Run("racing the end", func(t *testing.T) {
		srv := testserver.Start(t)
		r := newStreamReactor(t, srv.Addr(), reactor.Config{})
		for i := range 40 {
			var l streamLog
			s := reactor.Watch(r, watch, &testpb.WatchRequest{Count: 3, Message: "m"}, nil, l.watchHandler())
			if i%2 == 1 {
				<-r.Ready() // a message, or more, or the end, is waiting
			}
			s.Cancel()
			n := len(l.msgs)
			// Polling too: the Ready taken above stands for what waits.
			tickUntil(t, r, bound, true, "the end", func() { r.Tick(time.Second) }, l.ended)
			l.checkEnd(t)
			require.Equal(t, n, len(l.msgs), "no OnMessage after Cancel returned on the host")
			if l.err != nil {
				require.ErrorIs(t, l.err, calls.ErrCancelled)
			}
		}
	})
}

// TestCloseStreams ends every open stream with ErrClosed; the reactor keeps serving calls and
// new streams.
func TestCloseStreams(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var a, b streamLog
	reactor.Watch(r, watch, forever(), nil, a.watchHandler())
	reactor.Bidi(r, chat, nil, b.chatHandler())
	waitFor(t, r, func() bool { return len(a.msgs) > 0 })
	r.CloseStreams()
	n := len(a.msgs)
	waitFor(t, r, func() bool { return a.ended() && b.ended() })
	a.checkEnd(t)
	b.checkEnd(t)
	require.Equal(t, n, len(a.msgs), "no OnMessage after CloseStreams")
	require.ErrorIs(t, a.err, calls.ErrClosed)
	require.ErrorIs(t, b.err, calls.ErrClosed)
	require.True(t, r.Idle())

	_, _, err := roundTrip(t, r, &testpb.EchoRequest{Message: "still"}, nil)
	require.NoError(t, err)
	var c streamLog
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: 2, Message: "c"}, nil, c.watchHandler())
	waitFor(t, r, c.ended)
	require.NoError(t, c.err)
	require.Equal(t, seq("c", 0, 2), c.msgs)
}

// TestCloseAndShutdownEndStreams: Shutdown and Close end open streams, deliver their ends with
// ErrClosed before they return, and leave no goroutine behind.
func TestCloseAndShutdownEndStreams(t *testing.T) {
	for _, shutdown := range []bool{false, true} {
		name := map[bool]string{false: "Close", true: "Shutdown"}[shutdown]
		t.Run(name, func(t *testing.T) {
			srv := testserver.Start(t)
			before := goleak.IgnoreCurrent()
			cfg := longTimeouts(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure()})
			r, err := reactor.New(cfg)
			require.NoError(t, err)
			var a, b streamLog
			reactor.Watch(r, watch, forever(), nil, a.watchHandler())
			bs := reactor.Bidi(r, chat, nil, b.chatHandler())
			require.NoError(t, bs.Send(&testpb.EchoRequest{Message: "x"}))
			waitFor(t, r, func() bool { return len(a.msgs) > 0 && len(b.msgs) > 0 })
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			if shutdown {
				require.NoError(t, r.Shutdown(ctx))
			} else {
				require.NoError(t, r.Close(ctx))
			}
			a.checkEnd(t)
			b.checkEnd(t)
			require.ErrorIs(t, a.err, calls.ErrClosed)
			require.ErrorIs(t, b.err, calls.ErrClosed)
			var late streamLog
			reactor.Watch(r, watch, forever(), nil, late.watchHandler())
			r.Tick(time.Second)
			late.checkEnd(t)
			require.ErrorIs(t, late.err, calls.ErrClosed)
			goleak.VerifyNone(t, before)
		})
	}
}

// TestCloseBoundedByStreamHook: a stream interceptor that ignores its context holds its
// stream's goroutine; Close returns once its context is done and the lanes' grace has passed,
// with an error matching ErrHookBlocked, and the stream's end delivered.
func TestCloseBoundedByStreamHook(t *testing.T) {
	srv := testserver.Start(t)
	release := make(chan struct{})
	entered := make(chan struct{}, 1)
	hook := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		entered <- struct{}{}
		<-release // ignores ctx
		return nil, status.Error(codes.Unavailable, "released")
	}
	cfg := longTimeouts(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure(),
		DialOptions: []grpc.DialOption{grpc.WithStreamInterceptor(hook)}})
	r, err := reactor.New(cfg)
	require.NoError(t, err)
	defer close(release)
	var l streamLog
	reactor.Watch(r, watch, forever(), nil, l.watchHandler())
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = r.Close(ctx)
	require.ErrorIs(t, err, reactor.ErrHookBlocked)
	require.ErrorContains(t, err, "streams' goroutines")
	l.checkEnd(t)
	require.ErrorIs(t, l.err, calls.ErrClosed)
}

// TestWatchBackendStops: a backend that stops mid-stream ends it with Unavailable after the
// messages received; one that stops gracefully lets a finite stream finish.
func TestWatchBackendStops(t *testing.T) {
	t.Run("Stop", func(t *testing.T) {
		srv := testserver.Start(t)
		r := newStreamReactor(t, srv.Addr(), reactor.Config{})
		var l streamLog
		reactor.Watch(r, watch, forever(), nil, l.watchHandler())
		waitFor(t, r, func() bool { return len(l.msgs) >= 3 })
		srv.Stop()
		waitFor(t, r, l.ended)
		l.checkEnd(t)
		require.Equal(t, seq("m", 0, len(l.msgs)), l.msgs)
		require.Equal(t, codes.Unavailable, status.Code(l.err), "%v", l.err)
	})
	t.Run("GracefulStop", func(t *testing.T) {
		srv := testserver.Start(t)
		r := newStreamReactor(t, srv.Addr(), reactor.Config{})
		var l streamLog
		reactor.Watch(r, watch, &testpb.WatchRequest{Count: 20, IntervalMs: 5, Message: "m"}, nil, l.watchHandler())
		waitFor(t, r, func() bool { return len(l.msgs) >= 1 })
		stopped := make(chan struct{})
		go func() { srv.GracefulStop(); close(stopped) }()
		waitFor(t, r, l.ended)
		<-stopped
		l.checkEnd(t)
		require.NoError(t, l.err)
		require.Equal(t, seq("m", 0, 20), l.msgs)
	})
}

// TestStopAfterOKEnd: a stop that comes after the server ended the stream OK, while its
// messages still wait for Tick, discards them, and the end is then the stop's error, never
// nil, which would say that every message was delivered.
func TestStopAfterOKEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		stop     func(r *reactor.Reactor, s *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse])
		want     error
		wantMsgs int
	}{
		{"no stop", func(*reactor.Reactor, *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse]) {}, nil, 5},
		{"Cancel", func(_ *reactor.Reactor, s *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse]) { s.Cancel() }, calls.ErrCancelled, 0},
		{"CloseStreams", func(r *reactor.Reactor, _ *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse]) {
			r.CloseStreams()
		}, calls.ErrClosed, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newStreamReactor(t, srv.Addr(), reactor.Config{})
			var l streamLog
			s := reactor.Watch(r, watch, &testpb.WatchRequest{Count: 5, Message: "m"}, nil, l.watchHandler())
			require.Eventually(t, func() bool { return reactor.StreamEndDecided(s) }, 5*time.Second, time.Millisecond)
			tc.stop(r, s)
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			require.Len(t, l.msgs, tc.wantMsgs)
			if tc.want == nil {
				require.NoError(t, l.err)
				return
			}
			require.ErrorIs(t, l.err, tc.want)
			st := r.Stats().Methods[watch.Path()].Streams
			require.EqualValues(t, 5, st.Discarded, "the messages waiting were discarded")
			require.EqualValues(t, 1, st.Ended[status.Code(l.err)], "the end counted under the stop's code")
		})
	}
}

// heldSender is a stream interceptor whose SendMsg, for a message "hold", waits until the
// stream's context ends (the receiver has the server's end and stops the sender), says so on
// ended, and then holds the sender until release closes, ignoring the context, as a hook of
// the host may.
type heldSender struct {
	grpc.ClientStream
	ctx     context.Context
	ended   chan<- struct{}
	release <-chan struct{}
}

func (h *heldSender) SendMsg(m any) error {
	if req, ok := m.(*testpb.EchoRequest); ok && req.GetMessage() == "hold" {
		<-h.ctx.Done()
		h.ended <- struct{}{}
		<-h.release
	}
	return h.ClientStream.SendMsg(m)
}

// TestBidiEndNamesServerFirst: once the server has ended a Bidi stream, what comes while its
// sender has not exited — a Cancel, or Close giving up on a sender a hook holds — is not the
// end's cause: the end is the server's, and the message the hook held is Unsent.
func TestBidiEndNamesServerFirst(t *testing.T) {
	for _, by := range []string{"Cancel", "Close"} {
		t.Run(by, func(t *testing.T) {
			srv := testserver.Start(t)
			ended, release := make(chan struct{}, 1), make(chan struct{})
			hook := func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
				cs, err := streamer(ctx, desc, cc, method, opts...)
				if err != nil {
					return nil, err
				}
				return &heldSender{ClientStream: cs, ctx: ctx, ended: ended, release: release}, nil
			}
			r, err := reactor.New(longTimeouts(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure(),
				DialOptions: []grpc.DialOption{grpc.WithStreamInterceptor(hook)}}))
			require.NoError(t, err)
			var l streamLog
			b := reactor.Bidi(r, chat, nil, l.chatHandler())
			require.NoError(t, b.Send(&testpb.EchoRequest{FailCode: int32(codes.Unavailable), FailMessage: "going away"}))
			require.NoError(t, b.Send(&testpb.EchoRequest{Message: "hold"}))
			select {
			case <-ended: // the receiver has the server's Unavailable and waits for the sender
			case <-time.After(bound):
				t.Fatal("the server's end did not reach the receiver")
			}
			switch by {
			case "Cancel":
				b.Cancel()
				close(release)
				waitFor(t, r, l.ended)
				require.NoError(t, r.Close(context.Background()))
			case "Close":
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				require.ErrorIs(t, r.Close(ctx), reactor.ErrHookBlocked)
				close(release)
			}
			l.checkEnd(t)
			require.Equal(t, codes.Unavailable, status.Code(l.err), "%v", l.err)
			require.ErrorContains(t, l.err, "going away")
			if by == "Cancel" {
				require.Len(t, b.Unsent(), 1, "the message the hook held never reached gRPC")
				require.Equal(t, "hold", b.Unsent()[0].GetMessage())
			}
		})
	}
}
