package reactor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestStreamInterleavesWithCallsUnderBudget: a stream's message and a call's completion are
// delivered from one queue, in arrival order, and a Tick with budget 0 delivers exactly one.
func TestStreamInterleavesWithCallsUnderBudget(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var events []string
	l := streamLog{events: &events, name: "s"}
	b := reactor.Bidi(r, chat, nil, l.chatHandler())
	require.NoError(t, b.Send(&testpb.EchoRequest{Message: "a"}))
	select { // the echo of a is waiting: nothing else could wake the host
	case <-r.Ready():
	case <-time.After(bound):
		t.Fatal("no echo")
	}
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "c"}, nil).Then(func(resp *testpb.EchoResponse) {
		events = append(events, "call:"+resp.GetMessage())
	})
	require.Eventually(t, func() bool {
		st := r.Stats()
		return st.Pending == 1 && st.Queued == 0 && st.InFlight == 0
	}, bound, poll, "the call's completion is queued for Tick")
	require.Equal(t, 1, r.Tick(0).Delivered)
	require.Equal(t, []string{"s:a"}, events)
	require.Equal(t, 1, r.Tick(0).Delivered)
	require.Equal(t, []string{"s:a", "call:c"}, events)

	require.NoError(t, b.CloseSend())
	require.ErrorIs(t, b.CloseSend(), calls.ErrStreamDone)
	require.ErrorIs(t, b.Send(&testpb.EchoRequest{}), calls.ErrStreamDone)
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.NoError(t, l.err)
	require.Empty(t, b.Unsent())
}

// TestBidiEchoesInOrder: Sends reach the server in order and their echoes come back in order.
func TestBidiEchoesInOrder(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	b := reactor.Bidi(r, chat, &calls.StreamOptions{MaxSendQueue: 100}, l.chatHandler())
	for i := range 100 {
		require.NoError(t, b.Send(&testpb.EchoRequest{Message: "m" + itoa(i)}))
	}
	require.NoError(t, b.CloseSend())
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.NoError(t, l.err)
	require.Equal(t, seq("m", 0, 100), l.msgs)
}

// TestBidiSendQueueBound: Send fails with ErrOverloaded, naming the bound, once MaxSendQueue
// messages wait, and never blocks.
func TestBidiSendQueueBound(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	// The server blocks on the first message, so the sender is held in flow control at
	// worst; the queue fills from the host's side at once, since nothing is read faster than
	// Send adds.
	b := reactor.Bidi(r, chat, &calls.StreamOptions{MaxSendQueue: 2}, l.chatHandler())
	var overloaded error
	for i := 0; i < 1000 && overloaded == nil; i++ {
		// Large payloads: the sender stalls on HTTP/2's window while the server waits.
		overloaded = b.Send(&testpb.EchoRequest{Message: "x", DelayMs: 60_000, Payload: make([]byte, 64<<10)})
	}
	require.ErrorIs(t, overloaded, calls.ErrOverloaded)
	require.Contains(t, overloaded.Error(), "MaxSendQueue")
	b.Cancel()
	require.ErrorIs(t, b.Send(&testpb.EchoRequest{}), calls.ErrStreamDone)
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.ErrorIs(t, l.err, calls.ErrCancelled)
	require.NotEmpty(t, b.Unsent(), "the messages still queued when the stream ended")
}

// TestBidiUnsentAfterFailure: once the server fails the stream, the messages queued behind
// are listed by Unsent, each either sent or listed.
func TestBidiUnsentAfterFailure(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	b := reactor.Bidi(r, chat, &calls.StreamOptions{MaxSendQueue: 10}, l.chatHandler())
	// The first message makes the server wait, then fail: the rest are queued by then.
	require.NoError(t, b.Send(&testpb.EchoRequest{Message: "fail", DelayMs: 200, FailCode: int32(codes.Aborted)}))
	for i := range 9 {
		require.NoError(t, b.Send(&testpb.EchoRequest{Message: "m" + itoa(i), Payload: make([]byte, 32<<10)}))
	}
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.Equal(t, codes.Aborted, status.Code(l.err))
	require.Empty(t, l.msgs)
	unsent := b.Unsent()
	for i, m := range unsent { // a suffix of what was sent, in order
		require.Equal(t, "m"+itoa(9-len(unsent)+i), m.GetMessage())
	}
}

// TestBidiEncodeErrorEndsStream: a message that does not encode ends the stream with
// ErrInvalidArgument, not NotSent (the server had the stream open), and is listed in Unsent.
func TestBidiEncodeErrorEndsStream(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	b := reactor.Bidi(r, chat, nil, l.chatHandler())
	bad := &testpb.EchoRequest{Message: string([]byte{0xff, 0xfe})}
	require.NoError(t, b.Send(bad))
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.ErrorIs(t, l.err, calls.ErrInvalidArgument)
	var ce *calls.Error
	require.True(t, errors.As(l.err, &ce) && !ce.NotSent(), "%v", l.err)
	require.Equal(t, []*testpb.EchoRequest{bad}, b.Unsent())
}

// TestWatchRefusedAtOpen: bad input ends the stream at the next Tick with InvalidArgument,
// NotSent, and a nil handler panics.
func TestWatchRefusedAtOpen(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{Methods: []calls.Descriptor{watch, echo}})
	for _, tc := range []struct {
		name string
		req  *testpb.WatchRequest
		m    *calls.StreamMethod[*testpb.WatchRequest, *testpb.EchoResponse]
		opts *calls.StreamOptions
		kind error
		want string
	}{
		{"nil request", nil, watch, nil, calls.ErrInvalidArgument, "nil request"},
		{"MaxWaiting negative", &testpb.WatchRequest{}, watch, &calls.StreamOptions{MaxWaiting: -1}, calls.ErrInvalidArgument, "StreamOptions.MaxWaiting -1 must be between 1 and 4096"},
		{"MaxWaiting above", &testpb.WatchRequest{}, watch, &calls.StreamOptions{MaxWaiting: 4097}, calls.ErrInvalidArgument, "StreamOptions.MaxWaiting"},
		{"MaxSendQueue above", &testpb.WatchRequest{}, watch, &calls.StreamOptions{MaxSendQueue: 5000}, calls.ErrInvalidArgument, "StreamOptions.MaxSendQueue"},
		{"bad metadata", &testpb.WatchRequest{}, watch, &calls.StreamOptions{Metadata: map[string][]string{"grpc-x": {"1"}}}, calls.ErrInvalidArgument, "grpc-x"},
		{"not allowed", &testpb.WatchRequest{}, calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse]("/prpctest.Unlisted/Watch"), nil, calls.ErrInvalidArgument, "Config.Methods"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l streamLog
			reactor.Watch(r, tc.m, tc.req, tc.opts, l.watchHandler())
			require.False(t, l.ended(), "OnEnd never runs inside Watch")
			r.Tick(time.Second)
			l.checkEnd(t)
			require.ErrorIs(t, l.err, tc.kind)
			require.ErrorContains(t, l.err, tc.want)
			var ce *calls.Error
			require.True(t, errors.As(l.err, &ce) && ce.NotSent())
		})
	}
	// A handler without OnMessage panics: TestStreamHandlerNeedsOneOnMessage.
}

// TestMaxStreams: a stream beyond MaxStreams ends with ErrOverloaded, NotSent, at the next
// Tick; once an open one's end is delivered, a new one opens.
func TestMaxStreams(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{MaxStreams: 2})
	var a, b, c, d streamLog
	sa := reactor.Watch(r, watch, &testpb.WatchRequest{Forever: true, IntervalMs: 60_000}, nil, a.watchHandler())
	reactor.Watch(r, watch, &testpb.WatchRequest{Forever: true, IntervalMs: 60_000}, nil, b.watchHandler())
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: 1}, nil, c.watchHandler())
	r.Tick(time.Second)
	c.checkEnd(t)
	require.ErrorIs(t, c.err, calls.ErrOverloaded)
	require.ErrorContains(t, c.err, "MaxStreams")
	var ce *calls.Error
	require.True(t, errors.As(c.err, &ce) && ce.NotSent())
	sa.Cancel()
	waitFor(t, r, a.ended)
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: 1, Message: "d"}, nil, d.watchHandler())
	waitFor(t, r, d.ended)
	require.NoError(t, d.err)
	require.Equal(t, []string{"d0"}, d.msgs)
}
