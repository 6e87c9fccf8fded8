package reactor_test

import (
	"context"
	"errors"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// The streams' fault tests: whatever fails, each message is delivered once and in order (a
// prefix of what the server sent, checked by checkInOrder) and the end once and last
// (streamLog.checkEnd), with the code of what ended the stream first.

// checkInOrder checks that l's messages are prefix0, prefix1, … without gaps or repeats.
func (l *streamLog) checkInOrder(t *testing.T, prefix string) {
	t.Helper()
	for i, m := range l.msgs {
		require.Equal(t, prefix+itoa(i), m, "messages in order, once each: %v", l.msgs)
	}
}

// TestStreamBackendKilled: a backend stopped mid-stream (its connections closed) ends a server
// stream and a bidi stream with Unavailable, after the messages received, in order.
func TestStreamBackendKilled(t *testing.T) {
	for _, bidi := range []bool{false, true} {
		t.Run(map[bool]string{false: "Watch", true: "Bidi"}[bidi], func(t *testing.T) {
			srv := testserver.Start(t)
			r := newStreamReactor(t, srv.Addr(), reactor.Config{})
			var l streamLog
			if bidi {
				s := reactor.Bidi(r, chat, nil, l.chatHandler())
				for i := range 5 {
					require.NoError(t, s.Send(&testpb.EchoRequest{Message: "m" + itoa(i)}))
				}
				waitFor(t, r, func() bool { return len(l.msgs) == 5 })
				// More sends after the kill: each is sent or fails, none arrives twice.
				srv.Stop()
				for i := 5; i < 10; i++ {
					_ = s.Send(&testpb.EchoRequest{Message: "m" + itoa(i)})
				}
			} else {
				reactor.Watch(r, watch, forever(), nil, l.watchHandler())
				waitFor(t, r, func() bool { return len(l.msgs) >= 5 })
				srv.Stop()
			}
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			l.checkInOrder(t, "m")
			require.GreaterOrEqual(t, len(l.msgs), 5)
			require.Equal(t, codes.Unavailable, status.Code(l.err), "%v", l.err)
			var ce *calls.Error
			require.True(t, errors.As(l.err, &ce) && !ce.NotSent(), "the stream reached the server: %v", l.err)
			r.Tick(time.Second)
			require.Equal(t, 1, l.ends)
		})
	}
}

// TestStreamGoAway: a graceful stop sends GOAWAY, which lets the streams open go on: a forever
// stream keeps delivering, in order, and the stop waits for it. What ends it then names its
// cause: Cancel ends it with ErrCancelled (and lets the graceful stop return), a hard stop
// with Unavailable.
func TestStreamGoAway(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(s *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], srv *testserver.Server)
		code codes.Code
	}{
		{"then Cancel", func(s *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], _ *testserver.Server) { s.Cancel() }, codes.Canceled},
		{"then Stop", func(_ *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], srv *testserver.Server) { srv.Stop() }, codes.Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newStreamReactor(t, srv.Addr(), reactor.Config{})
			var l streamLog
			s := reactor.Watch(r, watch, forever(), nil, l.watchHandler())
			waitFor(t, r, func() bool { return len(l.msgs) >= 3 })
			stopped := make(chan struct{})
			go func() { srv.GracefulStop(); close(stopped) }()
			// The stream outlives the GOAWAY: 50 more messages (about 50 ms of the server's
			// 1 ms interval) while the graceful stop waits for it.
			n := len(l.msgs)
			waitFor(t, r, func() bool { return len(l.msgs) >= n+50 })
			select {
			case <-stopped:
				t.Fatal("the graceful stop returned while the stream was open")
			default:
			}
			require.False(t, l.ended())
			tc.end(s, srv)
			waitFor(t, r, l.ended)
			select {
			case <-stopped:
			case <-time.After(bound):
				t.Fatal("the graceful stop did not return once the stream ended")
			}
			l.checkEnd(t)
			l.checkInOrder(t, "m")
			require.Equal(t, tc.code, status.Code(l.err), "%v", l.err)
		})
	}
}

// TestStreamReconnect: after the backend is killed and restarted on the same address, streams
// opened on the same reactor are served in full, without any of the old stream's messages.
func TestStreamReconnect(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{Backoff: fastBackoff})
	var old streamLog
	reactor.Watch(r, watch, forever(), nil, old.watchHandler())
	waitFor(t, r, func() bool { return len(old.msgs) >= 3 })
	srv.Restart(t)
	waitFor(t, r, old.ended)
	old.checkEnd(t)
	old.checkInOrder(t, "m")
	require.Equal(t, codes.Unavailable, status.Code(old.err), "%v", old.err)
	got := len(old.msgs)

	opts := &calls.StreamOptions{WaitForReady: true, MaxWaiting: 4}
	var w, b streamLog
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: 20, Message: "w"}, opts, w.watchHandler())
	bs := reactor.Bidi(r, chat, opts, b.chatHandler())
	for i := range 3 {
		require.NoError(t, bs.Send(&testpb.EchoRequest{Message: "b" + itoa(i)}))
	}
	require.NoError(t, bs.CloseSend())
	waitFor(t, r, func() bool { return w.ended() && b.ended() })
	for _, c := range []struct {
		l      *streamLog
		prefix string
		n      int
	}{{&w, "w", 20}, {&b, "b", 3}} {
		c.l.checkEnd(t)
		require.NoError(t, c.l.err)
		require.Equal(t, seq(c.prefix, 0, c.n), c.l.msgs)
	}
	require.Equal(t, got, len(old.msgs), "nothing of the old stream after its end")
}

// TestStreamHostPauses: a host that does not tick for a second while a server sends more than
// MaxWaiting messages finds exactly MaxWaiting waiting (the receiver stopped reading), then
// gets every message once, in order, and the end last.
func TestStreamHostPauses(t *testing.T) {
	pause := time.Second
	if testing.Short() {
		pause = 100 * time.Millisecond
	}
	for _, maxWaiting := range []int{1, 4, 64} {
		t.Run("MaxWaiting="+itoa(maxWaiting), func(t *testing.T) {
			n := 3*maxWaiting + 5
			srv := testserver.Start(t)
			r := newStreamReactor(t, srv.Addr(), reactor.Config{})
			var l streamLog
			reactor.Watch(r, watch, &testpb.WatchRequest{Count: int64(n), Message: "m"},
				&calls.StreamOptions{MaxWaiting: maxWaiting}, l.watchHandler())
			// The server sends all n (they fit in HTTP/2's window), the receiver reads
			// MaxWaiting of them and stalls; the host does not tick for the pause.
			require.Eventually(t, func() bool { return srv.StreamSent() == int64(n) }, bound, poll)
			<-time.After(pause)
			rep := r.Tick(time.Minute)
			require.Equal(t, maxWaiting, rep.Delivered, "exactly MaxWaiting waited")
			require.Equal(t, seq("m", 0, maxWaiting), l.msgs)
			require.False(t, l.ended())
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			require.NoError(t, l.err)
			require.Equal(t, seq("m", 0, n), l.msgs)
		})
	}
}

// TestStreamCancelRacesEnd: Cancel from another goroutine racing a short stream's end, many
// rounds: the end is delivered once and last, OK (the server's end came first) or
// ErrCancelled, and the messages delivered are the first ones, in order.
func TestStreamCancelRacesEnd(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	rounds := 100
	if testing.Short() {
		rounds = 20
	}
	seen := map[bool]int{}
	for i := range rounds {
		var l streamLog
		s := reactor.Watch(r, watch, &testpb.WatchRequest{Count: 3, Message: "m"}, nil, l.watchHandler())
		if i%2 == 1 {
			<-r.Ready() // the stream is open and its messages, or its end, arriving
		}
		go s.Cancel()
		// Polling too: the Ready taken above stands for what waits.
		tickUntil(t, r, bound, true, "the end", func() { r.Tick(time.Second) }, l.ended)
		l.checkEnd(t)
		l.checkInOrder(t, "m")
		require.LessOrEqual(t, len(l.msgs), 3)
		if l.err != nil {
			require.ErrorIs(t, l.err, calls.ErrCancelled, "round %d", i)
		}
		seen[l.err == nil]++
		r.Tick(time.Second)
		require.Equal(t, 1, l.ends, "round %d", i)
	}
	t.Logf("%d rounds: %d ended OK, %d cancelled", rounds, seen[true], seen[false])
}

// TestStreamCloseRacesMessage: Close begins just as a stream's messages arrive, many short
// rounds: the end is delivered once and last, before Close returns, with ErrClosed (or OK if
// the server's end was decided first); the messages delivered are the first ones, in order
// (those still waiting when Close begins are discarded, as Watch says, even before an OK end);
// no goroutine is left behind.
func TestStreamCloseRacesMessage(t *testing.T) {
	srv := testserver.Start(t)
	before := goleak.IgnoreCurrent()
	rounds := 50
	if testing.Short() {
		rounds = 10
	}
	outcomes := map[[2]int]int{}
	for i := range rounds {
		r, err := reactor.New(longTimeouts(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure()}))
		require.NoError(t, err)
		var a, b streamLog
		// a sends a few messages and ends; b sends flat out, so that messages arrive
		// while Close begins.
		reactor.Watch(r, watch, &testpb.WatchRequest{Count: 5, Message: "m"}, nil, a.watchHandler())
		reactor.Watch(r, watch, &testpb.WatchRequest{Forever: true, Message: "m"}, &calls.StreamOptions{MaxWaiting: 4}, b.watchHandler())
		waitFor(t, r, func() bool { return len(b.msgs) >= i%3 })
		na, nb := len(a.msgs), len(b.msgs)
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		require.NoError(t, r.Close(ctx))
		cancel()
		for _, l := range []*streamLog{&a, &b} {
			l.checkEnd(t)
			l.checkInOrder(t, "m")
		}
		require.Equal(t, na, len(a.msgs), "no OnMessage once Close has begun, round %d", i)
		require.Equal(t, nb, len(b.msgs), "no OnMessage once Close has begun, round %d", i)
		require.LessOrEqual(t, len(a.msgs), 5)
		if a.err != nil {
			require.ErrorIs(t, a.err, calls.ErrClosed, "round %d", i)
		}
		require.ErrorIs(t, b.err, calls.ErrClosed, "round %d", i)
		outcomes[[2]int{len(a.msgs), int(status.Code(a.err))}]++
	}
	goleak.VerifyNone(t, before)
	t.Logf("%d rounds: the short stream's {messages delivered, end code}: rounds %v", rounds, outcomes)
}

// TestStreamTooLarge: a message over Limits.MaxResponseBytes ends its stream with ErrTooLarge,
// after the messages before it, and costs nothing else: the connection serves the next call.
func TestStreamTooLarge(t *testing.T) {
	const limit = 4 << 10
	for _, tc := range []struct {
		name string
		open func(r *reactor.Reactor, l *streamLog)
		msgs []string
	}{
		{"Watch, first message", func(r *reactor.Reactor, l *streamLog) {
			reactor.Watch(r, watch, &testpb.WatchRequest{Count: 3, Message: "m", PayloadBytes: 2 * limit}, nil, l.watchHandler())
		}, nil},
		{"Bidi, third message", func(r *reactor.Reactor, l *streamLog) {
			s := reactor.Bidi(r, chat, nil, l.chatHandler())
			for i, size := range []int64{0, 1, 2 * limit, 0} {
				_ = s.Send(&testpb.EchoRequest{Message: "m" + itoa(i), ResponseBytes: size})
			}
		}, seq("m", 0, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newStreamReactor(t, srv.Addr(), reactor.Config{Limits: limits.Limits{MaxResponseBytes: limit}})
			var l streamLog
			tc.open(r, &l)
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			require.ErrorIs(t, l.err, calls.ErrTooLarge)
			require.Equal(t, tc.msgs, l.msgs)
			_, _, err := roundTrip(t, r, &testpb.EchoRequest{Message: "after"}, nil)
			require.NoError(t, err, "the connection outlives the stream's oversized message")
		})
	}
}

// TestStreamParentContext: the end of StreamOptions.Context ends the stream after the messages
// already waiting, with ErrCancelled when it is cancelled and ErrTimeout when its deadline
// passes.
func TestStreamParentContext(t *testing.T) {
	for _, tc := range []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		want error
		code codes.Code
	}{
		{"cancelled", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) },
			calls.ErrCancelled, codes.Canceled},
		{"deadline", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 200*time.Millisecond)
		}, calls.ErrTimeout, codes.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newStreamReactor(t, srv.Addr(), reactor.Config{})
			ctx, cancel := tc.ctx()
			defer cancel()
			var l streamLog
			reactor.Watch(r, watch, forever(), &calls.StreamOptions{Context: ctx, MaxWaiting: 8}, l.watchHandler())
			waitFor(t, r, func() bool { return len(l.msgs) >= 3 })
			if tc.want == calls.ErrCancelled {
				cancel()
			}
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			l.checkInOrder(t, "m")
			require.ErrorIs(t, l.err, tc.want)
			require.Equal(t, tc.code, status.Code(l.err), "%v", l.err)
			var ce *calls.Error
			require.True(t, errors.As(l.err, &ce) && !ce.NotSent(), "%v", l.err)
		})
	}
}

// joinStream is a client-streaming method: the requests' messages, joined, in one response.
var joinStream = calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Sum/Join")

// TestClientStream: a client-streaming method opened with Bidi delivers its one response as
// its one message, then the end; a handler failing after the requests ends it with its status
// and no message.
func TestClientStream(t *testing.T) {
	b := reactortest.NewBackend()
	var mu sync.Mutex
	var got [][]string
	reactortest.HandleBidi(b, calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Sum/Join"), func(ctx context.Context, recv func() (*testpb.EchoRequest, error), send func(*testpb.EchoResponse) error) error {
		var joined string
		var msgs []string
		for {
			req, err := recv()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return err
			}
			if req.GetFailCode() != 0 {
				return status.Error(codes.Code(req.GetFailCode()), req.GetFailMessage())
			}
			msgs = append(msgs, req.GetMessage())
			joined += req.GetMessage()
		}
		mu.Lock()
		got = append(got, msgs)
		mu.Unlock()
		return send(&testpb.EchoResponse{Message: joined})
	})
	r := reactortest.NewReactor(t, b, reactor.Config{})
	for _, tc := range []struct {
		name string
		reqs []*testpb.EchoRequest
		msgs []string
		code codes.Code
	}{
		{"three", []*testpb.EchoRequest{{Message: "a"}, {Message: "b"}, {Message: "c"}}, []string{"abc"}, codes.OK},
		{"none", nil, []string{""}, codes.OK},
		{"failing", []*testpb.EchoRequest{{Message: "a"}, {FailCode: int32(codes.Aborted), FailMessage: "no"}}, nil, codes.Aborted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l streamLog
			s := reactor.Bidi(r, joinStream, nil, l.chatHandler())
			for _, req := range tc.reqs {
				require.NoError(t, s.Send(req))
			}
			require.NoError(t, s.CloseSend())
			require.ErrorIs(t, s.Send(&testpb.EchoRequest{}), calls.ErrStreamDone)
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			require.Equal(t, tc.msgs, l.msgs)
			require.Equal(t, tc.code, status.Code(l.err), "%v", l.err)
			require.Empty(t, s.Unsent())
		})
	}
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, [][]string{{"a", "b", "c"}, nil}, got, "the handler received each stream's requests, in order")
}
