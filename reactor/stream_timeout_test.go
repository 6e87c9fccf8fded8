package reactor_test

import (
	"errors"
	"strconv"
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

// TestWatchTimeoutMidStream: StreamOptions.Timeout ends an open stream exactly when due on
// the reactor's one timer, with ErrTimeout after the messages received, not NotSent; the
// handler's context ends with it.
func TestWatchTimeoutMidStream(t *testing.T) {
	const timeout = 2 * time.Second
	w := newScriptedWatch(t, attemptScript{n: 3, block: true})
	var l streamLog
	reactor.Watch(w.r, watch, &testpb.WatchRequest{}, &calls.StreamOptions{Timeout: timeout}, l.watchHandler())
	w.tickUntil(t, "3 messages", func() bool { return len(l.msgs) == 3 })
	require.False(t, l.ended())
	w.dueIn(t, timeout)
	w.tickUntil(t, "the end", l.ended)
	<-w.handled // the handler saw its context end
	l.checkEnd(t)
	require.ErrorIs(t, l.err, calls.ErrTimeout)
	require.Equal(t, codes.DeadlineExceeded, status.Code(l.err))
	var ce *calls.Error
	require.True(t, errors.As(l.err, &ce) && !ce.NotSent(), "%v", l.err)
	require.Equal(t, seq("m", 0, 3), l.msgs)
}

// TestWatchTimeoutAcrossReopenings: the timeout counts from Watch over every attempt and
// backoff: a stream reopened twice ends with ErrTimeout during its third backoff, when the
// timeout is due, and is not reopened after.
func TestWatchTimeoutAcrossReopenings(t *testing.T) {
	const backoff = 100 * time.Millisecond
	w := newScriptedWatch(t, attemptScript{n: 1, code: codes.Unavailable})
	var l streamLog
	var given []string
	h := l.watchHandler()
	h.Resume = resumeFrom(&given)
	opts := &calls.StreamOptions{Timeout: 5 * backoff / 2, Resubscribe: &calls.Resubscribe{BaseDelay: backoff, Jitter: reactor.None}}
	s := reactor.Watch(w.r, watch, &testpb.WatchRequest{}, opts, h)
	for i := range 2 {
		w.dueIn(t, backoff)
		w.tickUntil(t, "reopening "+strconv.Itoa(i+1), func() bool { return w.opened() == i+2 })
	}
	// The third attempt's message is delivered before the timeout ends the stream: else the
	// timeout may stop its receiver before it reads the message.
	w.tickUntil(t, "the third attempt's message", func() bool { return len(l.msgs) == 3 })
	w.dueIn(t, backoff/2) // 250 ms from Watch, before the third backoff's end at 300 ms
	w.tickUntil(t, "the end", l.ended)
	w.clk.Advance(time.Second)
	w.r.Tick(time.Second)
	l.checkEnd(t)
	require.ErrorIs(t, l.err, calls.ErrTimeout)
	require.Equal(t, seq("m", 0, 3), l.msgs)
	require.Equal(t, 3, w.opened())
	require.EqualValues(t, 2, reactor.StreamReopened(s))
}

// TestWatchTimeoutBeforeOpen: a stream still waiting for a connection (WaitForReady, the
// server down) when its timeout passes ends with ErrTimeout, NotSent: it never reached a
// server.
func TestWatchTimeoutBeforeOpen(t *testing.T) {
	srv := testserver.Start(t)
	addr := srv.Addr()
	srv.Stop()
	r := newStreamReactor(t, addr, reactor.Config{Backoff: fastBackoff})
	var l streamLog
	// 20 ms of the system clock: the test waits for it, bounded by bound.
	reactor.Watch(r, watch, forever(), &calls.StreamOptions{WaitForReady: true, Timeout: 20 * time.Millisecond}, l.watchHandler())
	waitFor(t, r, l.ended)
	l.checkEnd(t)
	require.ErrorIs(t, l.err, calls.ErrTimeout)
	var ce *calls.Error
	require.True(t, errors.As(l.err, &ce) && ce.NotSent(), "%v", l.err)
	require.Empty(t, l.msgs)
}
