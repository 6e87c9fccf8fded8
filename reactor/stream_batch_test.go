package reactor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// waitWaiting waits until n messages of r's streams wait for Tick.
func waitWaiting(t *testing.T, r *reactor.Reactor, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return r.Stats().MessagesWaiting == n }, bound, poll,
		"%d messages waiting", n)
}

// TestOnMessagesRuns: with OnMessages, the messages waiting together reach the handler in one
// run, in order, never more than MaxWaiting; a full ring's run frees it, so the receiver
// reads on, and the end comes once, after the last run. A run's messages are distinct, and
// the slice holds none of them once OnMessages has returned.
func TestOnMessagesRuns(t *testing.T) {
	const (
		maxWaiting = 8
		n          = 50
	)
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	var kept []*testpb.EchoResponse // the first run's slice, kept past its call
	h := l.watchBatchHandler()
	h.OnMessages = func(ms []*testpb.EchoResponse) {
		for i := range ms {
			for j := range i {
				require.NotSame(t, ms[i], ms[j])
			}
		}
		if kept == nil {
			kept = ms
		}
		l.messages(ms)
	}
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: n, Message: "m"}, &calls.StreamOptions{MaxWaiting: maxWaiting}, h)
	waitWaiting(t, r, maxWaiting)

	rep := r.Tick(time.Minute)
	require.Equal(t, maxWaiting, rep.Delivered, "the ring's messages, counted one by one")
	require.Equal(t, [][]string{seq("m", 0, maxWaiting)}, l.runs, "one run: the ring whole")
	require.Len(t, kept, maxWaiting)
	for i, m := range kept {
		require.Nil(t, m, "the slice still holds message %d after OnMessages returned", i)
	}

	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.NoError(t, l.err)
	require.Equal(t, seq("m", 0, n), l.msgs, "each message once, in order")
	for _, run := range l.runs {
		require.NotEmpty(t, run)
		require.LessOrEqual(t, len(run), maxWaiting)
	}
	st := r.Stats().Methods[watch.Path()].Streams
	require.EqualValues(t, n, st.Delivered)
	require.EqualValues(t, n, st.Received)
}

// TestOnMessagesKeepsArrivalOrder: a run holds only messages that arrived one after another:
// a call's completion between two of a stream's messages splits them, and with budget 0 a Tick
// delivers exactly one run, or one call.
func TestOnMessagesKeepsArrivalOrder(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var events []string
	l := streamLog{events: &events, name: "s"}
	b := reactor.Bidi(r, chat, nil, l.chatBatchHandler())
	require.NoError(t, b.Send(&testpb.EchoRequest{Message: "a1"}))
	require.NoError(t, b.Send(&testpb.EchoRequest{Message: "a2"}))
	waitWaiting(t, r, 2)
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "c"}, nil).Then(func(resp *testpb.EchoResponse) {
		events = append(events, "call:"+resp.GetMessage())
	})
	require.Eventually(t, func() bool {
		st := r.Stats()
		return st.Pending == 1 && st.Queued == 0 && st.InFlight == 0
	}, bound, poll, "the call's completion is queued for Tick")
	require.NoError(t, b.Send(&testpb.EchoRequest{Message: "b"}))
	waitWaiting(t, r, 3)

	require.Equal(t, 2, r.Tick(0).Delivered, "budget 0: one run, of two messages")
	require.Equal(t, [][]string{{"a1", "a2"}}, l.runs)
	require.Equal(t, 1, r.Tick(0).Delivered, "then the call")
	require.Equal(t, []string{"s:a1", "s:a2", "call:c"}, events)
	require.Equal(t, 1, r.Tick(0).Delivered, "then the run after it")
	require.Equal(t, [][]string{{"a1", "a2"}, {"b"}}, l.runs)

	require.NoError(t, b.CloseSend())
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.NoError(t, l.err)
}

// TestOnMessagesCancelDiscards: a run waiting when its stream is cancelled is discarded, not
// delivered, and counted so; the end follows.
func TestOnMessagesCancelDiscards(t *testing.T) {
	const maxWaiting = 4
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	s := reactor.Watch(r, watch, forever(), &calls.StreamOptions{MaxWaiting: maxWaiting}, l.watchBatchHandler())
	waitWaiting(t, r, maxWaiting)
	s.Cancel()
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.Empty(t, l.runs, "no OnMessages after Cancel returned on the host")
	require.ErrorIs(t, l.err, calls.ErrCancelled)
	st := r.Stats().Methods[watch.Path()].Streams
	require.EqualValues(t, maxWaiting, st.Discarded)
	require.Zero(t, st.Delivered)
}

// TestOnMessagesKeepLatest: with KeepLatest, each run is the one newest message.
func TestOnMessagesKeepLatest(t *testing.T) {
	const n = 200
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: n, Message: "m"},
		&calls.StreamOptions{KeepLatest: true}, l.watchBatchHandler())
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.NoError(t, l.err)
	require.Equal(t, "m"+itoa(n-1), l.msgs[len(l.msgs)-1], "the newest is delivered")
	for _, run := range l.runs {
		require.Len(t, run, 1)
	}
}

// TestOnMessagesPanicIsolated: a panic in OnMessages goes to OnCallbackPanic, and the stream's
// later runs and its end are delivered.
func TestOnMessagesPanicIsolated(t *testing.T) {
	const maxWaiting = 4
	srv := testserver.Start(t)
	var panics []any
	r := newStreamReactor(t, srv.Addr(), reactor.Config{OnCallbackPanic: func(p any) { panics = append(panics, p) }})
	var l streamLog
	h := l.watchBatchHandler()
	h.OnMessages = func(ms []*testpb.EchoResponse) {
		l.messages(ms)
		if len(l.runs) == 1 {
			panic("first run")
		}
	}
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: 10, Message: "m"}, &calls.StreamOptions{MaxWaiting: maxWaiting}, h)
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.NoError(t, l.err)
	require.Equal(t, []any{"first run"}, panics)
	require.Equal(t, seq("m", 0, 10), l.msgs)
	require.Greater(t, len(l.runs), 1)
}

// TestStreamHandlerNeedsOneOnMessage: Watch and Bidi panic, with a message that says what is
// wrong, unless a handler has exactly one of OnMessage and OnMessages.
func TestStreamHandlerNeedsOneOnMessage(t *testing.T) {
	r := newReactor(t, nil, reactor.Config{Target: "127.0.0.1:1"})
	onMessage := func(*testpb.EchoResponse) {}
	onMessages := func([]*testpb.EchoResponse) {}
	tests := []struct {
		name string
		open func()
		want string
	}{{
		name: "Watch with neither",
		open: func() {
			reactor.Watch(r, watch, forever(), nil, calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{})
		},
		want: "prpc: reactor.Watch with neither StreamHandler.OnMessage nor OnMessages",
	}, {
		name: "Watch with both",
		open: func() {
			reactor.Watch(r, watch, forever(), nil, calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{
				OnMessage: onMessage, OnMessages: onMessages})
		},
		want: "prpc: reactor.Watch with both StreamHandler.OnMessage and OnMessages: set one",
	}, {
		name: "Bidi with neither",
		open: func() {
			reactor.Bidi(r, chat, nil, calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{})
		},
		want: "prpc: reactor.Bidi with neither StreamHandler.OnMessage nor OnMessages",
	}, {
		name: "Bidi with both",
		open: func() {
			reactor.Bidi(r, chat, nil, calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{
				OnMessage: onMessage, OnMessages: onMessages})
		},
		want: "prpc: reactor.Bidi with both StreamHandler.OnMessage and OnMessages: set one",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.PanicsWithValue(t, tc.want, tc.open)
			require.Zero(t, r.Stats().StreamsOpen, "nothing was opened")
		})
	}
}

// TestOnMessagesRunHoldsOneStream: a run holds one stream's messages: another stream's of the
// same method that follow them in the queue make a run of their own, for their own handler.
func TestOnMessagesRunHoldsOneStream(t *testing.T) {
	const maxWaiting = 2
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	opts := &calls.StreamOptions{MaxWaiting: maxWaiting}
	var a, b streamLog
	sa := reactor.Watch(r, watch, forever(), opts, a.watchBatchHandler())
	waitWaiting(t, r, maxWaiting) // a's ring is full: a's receiver waits
	sb := reactor.Watch(r, watch, forever(), opts, b.watchBatchHandler())
	waitWaiting(t, r, 2*maxWaiting) // b's messages follow a's in the queue

	require.Equal(t, maxWaiting, r.Tick(0).Delivered, "budget 0: one run, a's")
	require.Equal(t, [][]string{seq("m", 0, maxWaiting)}, a.runs)
	require.Empty(t, b.runs)
	require.Equal(t, maxWaiting, r.Tick(0).Delivered, "then b's")
	require.Equal(t, [][]string{seq("m", 0, maxWaiting)}, b.runs)

	sa.Cancel()
	sb.Cancel()
	waitFor(t, r, func() bool { return a.ended() && b.ended() })
	a.checkEnd(t)
	b.checkEnd(t)
}
