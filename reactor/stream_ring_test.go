package reactor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestWatchBackpressure: against a server sending as fast as it can and a host that does not
// tick, at most MaxWaiting messages wait and the server's sends stop, held by HTTP/2's flow
// control; each Tick frees the ring and the stream goes on, in order.
func TestWatchBackpressure(t *testing.T) {
	const (
		maxWaiting = 4
		payload    = 4 << 10
		window     = 64 << 10
	)
	srv := testserver.Start(t)
	// A fixed window, without BDP estimation, so that what the connection holds is known.
	r := newStreamReactor(t, srv.Addr(), reactor.Config{DialOptions: []grpc.DialOption{
		grpc.WithInitialWindowSize(window), grpc.WithInitialConnWindowSize(window)}})
	var l streamLog
	s := reactor.Watch(r, watch, &testpb.WatchRequest{Forever: true, Message: "m", PayloadBytes: payload},
		&calls.StreamOptions{MaxWaiting: maxWaiting}, l.watchHandler())
	// The server's count stops growing: two readings 100 ms apart agree. A server that is not
	// held back sends thousands of messages in that time.
	last := int64(-1)
	require.Eventually(t, func() bool {
		n := srv.StreamSent()
		stable := n == last && n > 0
		last = n
		return stable
	}, bound, 100*time.Millisecond, "the server's sends stop")
	// What it sent is bounded by the ring, the message being read, the client's window and
	// the server's own write quota of a window's bytes, with a message's slack for each.
	bound := int64(maxWaiting + 1 + 2*window/payload + 4)
	require.LessOrEqual(t, last, bound)

	rep := r.Tick(time.Minute)
	require.Equal(t, maxWaiting, rep.Delivered, "the ring's messages, no more")
	require.Equal(t, seq("m", 0, maxWaiting), l.msgs)
	waitFor(t, r, func() bool { return len(l.msgs) >= 10*maxWaiting })
	require.Equal(t, seq("m", 0, len(l.msgs)), l.msgs)
	require.Greater(t, srv.StreamSent(), last, "the server sends again once Tick frees the ring")
	s.Cancel()
	waitFor(t, r, l.ended)
	l.checkEnd(t)
}

// TestWatchKeepLatest: with KeepLatest, messages that arrive while one waits replace it, so a
// host that ticks late gets the newest, never an older one after a newer.
func TestWatchKeepLatest(t *testing.T) {
	const n = 200
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: n, Message: "m"},
		&calls.StreamOptions{KeepLatest: true}, l.watchHandler())
	require.Eventually(t, func() bool { return srv.StreamSent() == n }, bound, poll)
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.NoError(t, l.err)
	require.NotEmpty(t, l.msgs)
	require.Equal(t, "m"+itoa(n-1), l.msgs[len(l.msgs)-1], "the newest is delivered")
	require.Less(t, len(l.msgs), n, "messages waiting were replaced")
	prev := -1
	for _, m := range l.msgs {
		i := atoi(m[1:])
		require.Greater(t, i, prev, "in order: %v", l.msgs)
		prev = i
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}
