package reactor_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// attemptScript is what the scripted Watch handler does on one attempt: it sends n messages,
// numbered from the request's Start, then ends with code (OK: nil), or, with block, waits for
// the stream's end.
type attemptScript struct {
	n     int
	code  codes.Code
	block bool
}

// scriptedWatch is a Backend on a manual clock whose Watch handler follows a script, one
// entry per attempt (the last one repeated), and records each attempt's request Start.
type scriptedWatch struct {
	b       *reactortest.Backend
	clk     *reactortest.ManualClock
	r       *reactor.Reactor
	mu      sync.Mutex
	starts  []int64
	handled chan struct{} // receives once per handler that returned
}

func newScriptedWatch(t *testing.T, script ...attemptScript) *scriptedWatch {
	t.Helper()
	w := &scriptedWatch{b: reactortest.NewBackend(), clk: reactortest.NewManualClock(time.Now()), handled: make(chan struct{}, 64)}
	var attempts atomic.Int64
	reactortest.HandleStream(w.b, watch, func(ctx context.Context, req *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
		defer func() { w.handled <- struct{}{} }()
		i := int(attempts.Add(1)) - 1
		sc := script[min(i, len(script)-1)]
		w.mu.Lock()
		w.starts = append(w.starts, req.GetStart())
		w.mu.Unlock()
		for k := range sc.n {
			if err := send(&testpb.EchoResponse{Message: "m" + strconv.Itoa(int(req.GetStart())+k)}); err != nil {
				return err
			}
		}
		if sc.block {
			<-ctx.Done()
			return ctx.Err()
		}
		return status.Error(sc.code, "scripted end")
	})
	w.r = newReactor(t, nil, longTimeouts(reactor.Config{Conn: w.b, Clock: w.clk}))
	return w
}

// opened returns how many attempts the backend saw.
func (w *scriptedWatch) opened() int { return w.b.Streams(watch.Path()) }

// requestStarts returns each attempt's request Start, in order.
func (w *scriptedWatch) requestStarts() []int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]int64(nil), w.starts...)
}

// tickUntil ticks w's reactor, polling, until cond holds.
func (w *scriptedWatch) tickUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	tickUntil(t, w.r, bound, true, what, func() { w.r.Tick(time.Second) }, cond)
}

// dueIn checks that the reactor's one timer is set for exactly d from now (none earlier, and
// it is the clock's only timer), then advances the clock to it.
func (w *scriptedWatch) dueIn(t *testing.T, d time.Duration) {
	t.Helper()
	at := w.clk.Now().Add(d)
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	require.NoError(t, w.clk.WaitTimerBy(ctx, at), "a timer due by %v", d)
	done, stop := context.WithCancel(context.Background())
	stop()
	require.Error(t, w.clk.WaitTimerBy(done, at.Add(-time.Nanosecond)), "no timer due before %v", d)
	require.Equal(t, 1, w.clk.Timers(), "the reactor's one timer")
	w.clk.Advance(d)
}

// resumeFrom is a Resume that asks for the messages after the last one delivered, and
// records what it was given.
func resumeFrom(given *[]string) func(*testpb.EchoResponse) *testpb.WatchRequest {
	return func(last *testpb.EchoResponse) *testpb.WatchRequest {
		*given = append(*given, last.GetMessage())
		n, _ := strconv.Atoi(strings.TrimPrefix(last.GetMessage(), "m"))
		return &testpb.WatchRequest{Start: int64(n + 1)}
	}
}

// resubscribeCase is a case of TestWatchResubscribe.
type resubscribeCase struct {
	name       string
	script     []attemptScript
	resub      calls.Resubscribe
	noResume   bool
	delays     []time.Duration // each reopening's backoff, in order
	wantMsgs   []string
	wantStarts []int64
	wantGiven  []string // what Resume was given
	wantCode   codes.Code
}

// TestWatchResubscribe: a stream ended by one of Resubscribe's codes is reopened after its
// backoff, exactly when due on the manual clock, with the request Resume builds from the last
// message delivered, so that every message arrives once and in order across the attempts;
// the backoff grows over attempts in a row without a message and resets after one with a
// message; MaxAttempts ends it; other codes end it at once.
func TestWatchResubscribe(t *testing.T) {
	const base = 100 * time.Millisecond
	tests := []resubscribeCase{{
		name:       "Unavailable reopens after the last message",
		script:     []attemptScript{{n: 3, code: codes.Unavailable}, {n: 2, code: codes.Unavailable}, {n: 4}},
		resub:      calls.Resubscribe{BaseDelay: base, Multiplier: 2, Jitter: reactor.None},
		delays:     []time.Duration{base, base}, // each attempt had a message: the backoff resets
		wantMsgs:   seq("m", 0, 9),
		wantStarts: []int64{0, 3, 5},
		wantGiven:  []string{"m2", "m4"},
		wantCode:   codes.OK,
	}, {
		name:       "attempts without a message grow the backoff until MaxAttempts",
		script:     []attemptScript{{n: 2, code: codes.Unavailable}, {code: codes.Unavailable}},
		resub:      calls.Resubscribe{BaseDelay: base, Multiplier: 2, Jitter: reactor.None, MaxAttempts: 3},
		delays:     []time.Duration{base, 2 * base, 4 * base},
		wantMsgs:   seq("m", 0, 2),
		wantStarts: []int64{0, 2, 2, 2},
		wantGiven:  []string{"m1", "m1", "m1"}, // the last message delivered, whatever came since
		wantCode:   codes.Unavailable,
	}, {
		name:       "MaxDelay bounds the backoff",
		script:     []attemptScript{{code: codes.Unavailable}, {code: codes.Unavailable}, {code: codes.Unavailable}, {n: 1}},
		resub:      calls.Resubscribe{BaseDelay: base, MaxDelay: 3 * base, Multiplier: 4, Jitter: reactor.None},
		noResume:   true,
		delays:     []time.Duration{base, 3 * base, 3 * base},
		wantMsgs:   seq("m", 0, 1),
		wantStarts: []int64{0, 0, 0, 0}, // no Resume: the first request again
		wantCode:   codes.OK,
	}, {
		name:       "a code of its own choice",
		script:     []attemptScript{{n: 1, code: codes.Internal}, {n: 1}},
		resub:      calls.Resubscribe{Codes: []codes.Code{codes.Internal}, BaseDelay: base, Jitter: reactor.None},
		delays:     []time.Duration{base},
		wantMsgs:   []string{"m0", "m1"},
		wantStarts: []int64{0, 1},
		wantGiven:  []string{"m0"},
		wantCode:   codes.OK,
	}, {
		name:       "a code not in Codes ends it",
		script:     []attemptScript{{n: 2, code: codes.NotFound}},
		resub:      calls.Resubscribe{Jitter: reactor.None},
		wantMsgs:   seq("m", 0, 2),
		wantStarts: []int64{0},
		wantCode:   codes.NotFound,
	}, {
		name:       "Unavailable is not in Codes given",
		script:     []attemptScript{{n: 1, code: codes.Unavailable}},
		resub:      calls.Resubscribe{Codes: []codes.Code{codes.Internal}},
		wantMsgs:   []string{"m0"},
		wantStarts: []int64{0},
		wantCode:   codes.Unavailable,
	}}
	for _, tc := range tests {
		for _, batched := range []bool{false, true} {
			name := tc.name
			if batched {
				name += ", OnMessages"
			}
			t.Run(name, func(t *testing.T) { testWatchResubscribe(t, tc, batched) })
		}
	}
}

func testWatchResubscribe(t *testing.T, tc resubscribeCase, batched bool) {
	w := newScriptedWatch(t, tc.script...)
	var l streamLog
	var given []string
	h := l.watchHandler()
	if batched {
		h = l.watchBatchHandler() // Resume is given the last message of the last run
	}
	if !tc.noResume {
		h.Resume = resumeFrom(&given)
	}
	resub := tc.resub
	s := reactor.Watch(w.r, watch, &testpb.WatchRequest{}, &calls.StreamOptions{Resubscribe: &resub}, h)
	for i, d := range tc.delays {
		w.dueIn(t, d)
		w.tickUntil(t, "reopening "+strconv.Itoa(i+1), func() bool { return w.opened() == i+2 })
	}
	w.tickUntil(t, "the end", l.ended)
	l.checkEnd(t)
	require.Equal(t, tc.wantCode, status.Code(l.err), "%v", l.err)
	require.Equal(t, tc.wantMsgs, l.msgs, "each message once, in order")
	require.Equal(t, tc.wantStarts, w.requestStarts())
	require.Equal(t, tc.wantGiven, given)
	require.Equal(t, len(tc.delays)+1, w.opened())
	require.EqualValues(t, len(tc.delays), reactor.StreamReopened(s))
	st := w.r.Stats().Methods[watch.Path()].Streams
	require.EqualValues(t, len(tc.delays), st.Reopened, "Stats counts each reopening")
	require.EqualValues(t, 1, st.Opened, "a reopened stream counts once in Opened")
}

// TestWatchResubscribeStoppedInBackoff: a stream cancelled, closed or timed out while it
// waits for its backoff is never reopened, even once the backoff is over, and ends once, with
// what stopped it.
func TestWatchResubscribeStoppedInBackoff(t *testing.T) {
	const backoff = 100 * time.Millisecond
	tests := []struct {
		name    string
		timeout time.Duration
		stop    func(t *testing.T, w *scriptedWatch, s *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], l *streamLog)
		want    error
	}{
		{"Cancel", 0, func(t *testing.T, w *scriptedWatch, s *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], l *streamLog) {
			s.Cancel()
			w.tickUntil(t, "the end", l.ended)
		}, calls.ErrCancelled},
		{"CloseStreams", 0, func(t *testing.T, w *scriptedWatch, _ *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], l *streamLog) {
			w.r.CloseStreams()
			w.tickUntil(t, "the end", l.ended)
		}, calls.ErrClosed},
		{"Close", 0, func(t *testing.T, w *scriptedWatch, _ *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], l *streamLog) {
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()
			require.NoError(t, w.r.Close(ctx))
			require.True(t, l.ended(), "Close delivers the end")
		}, calls.ErrClosed},
		{"Timeout", backoff / 2, func(t *testing.T, w *scriptedWatch, _ *calls.Stream[*testpb.WatchRequest, *testpb.EchoResponse], l *streamLog) {
			w.dueIn(t, backoff/2) // the timeout comes first, on the same one timer
			w.tickUntil(t, "the end", l.ended)
		}, calls.ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newScriptedWatch(t, attemptScript{n: 2, code: codes.Unavailable}, attemptScript{n: 5})
			var l streamLog
			resumed := 0
			h := l.watchHandler()
			h.Resume = func(*testpb.EchoResponse) *testpb.WatchRequest { resumed++; return &testpb.WatchRequest{Start: 2} }
			opts := &calls.StreamOptions{Timeout: tc.timeout, Resubscribe: &calls.Resubscribe{BaseDelay: backoff, Jitter: reactor.None}}
			s := reactor.Watch(w.r, watch, &testpb.WatchRequest{}, opts, h)
			w.tickUntil(t, "Resume", func() bool { return resumed == 1 }) // the reopen waits for its backoff
			<-w.handled
			tc.stop(t, w, s, &l)
			w.clk.Advance(time.Second) // the backoff is long over
			w.r.Tick(time.Second)
			l.checkEnd(t)
			require.ErrorIs(t, l.err, tc.want)
			require.Equal(t, []string{"m0", "m1"}, l.msgs)
			require.Equal(t, 1, w.opened(), "no reopening")
			require.Zero(t, reactor.StreamReopened(s))
			require.Equal(t, 1, resumed)
		})
	}
}

// TestWatchResumeFails: a Resume that returns nil or panics ends the stream with
// ErrInvalidArgument, not reopened; the panic goes to OnCallbackPanic.
func TestWatchResumeFails(t *testing.T) {
	for _, panics := range []bool{false, true} {
		t.Run("panics="+strconv.FormatBool(panics), func(t *testing.T) {
			b := reactortest.NewBackend()
			reactortest.HandleStream(b, watch, func(_ context.Context, _ *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
				if err := send(&testpb.EchoResponse{Message: "m0"}); err != nil {
					return err
				}
				return status.Error(codes.Unavailable, "going away")
			})
			var recovered atomic.Int32
			r := newReactor(t, nil, longTimeouts(reactor.Config{Conn: b, OnCallbackPanic: func(any) { recovered.Add(1) }}))
			var l streamLog
			h := l.watchHandler()
			h.Resume = func(*testpb.EchoResponse) *testpb.WatchRequest {
				if panics {
					panic("resume")
				}
				return nil
			}
			reactor.Watch(r, watch, &testpb.WatchRequest{}, &calls.StreamOptions{Resubscribe: &calls.Resubscribe{BaseDelay: time.Millisecond}}, h)
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			require.ErrorIs(t, l.err, calls.ErrInvalidArgument)
			require.Contains(t, l.err.Error(), "StreamHandler.Resume")
			require.Equal(t, 1, b.Streams(watch.Path()))
			if panics {
				require.EqualValues(t, 1, recovered.Load())
			}
		})
	}
}

// TestStreamOptionsRefused: bad Timeout and Resubscribe options, and Resubscribe on Bidi,
// end the stream at the next Tick with ErrInvalidArgument, NotSent, naming the field.
func TestStreamOptionsRefused(t *testing.T) {
	tests := []struct {
		name  string
		bidi  bool
		opts  calls.StreamOptions
		field string
	}{
		{"negative Timeout", false, calls.StreamOptions{Timeout: -time.Second}, "StreamOptions.Timeout"},
		{"Resubscribe on Bidi", true, calls.StreamOptions{Resubscribe: &calls.Resubscribe{}}, "StreamOptions.Resubscribe"},
		{"Codes with OK", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{Codes: []codes.Code{codes.Unavailable, codes.OK}}}, "Resubscribe.Codes"},
		{"Codes with Canceled", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{Codes: []codes.Code{codes.Canceled}}}, "Resubscribe.Codes"},
		{"negative BaseDelay", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{BaseDelay: -1}}, "Resubscribe.BaseDelay"},
		{"BaseDelay too long", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{BaseDelay: time.Hour}}, "Resubscribe.BaseDelay"},
		{"MaxDelay under BaseDelay", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{BaseDelay: time.Second, MaxDelay: time.Millisecond}}, "Resubscribe.MaxDelay"},
		{"Multiplier under 1", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{Multiplier: 0.5}}, "Resubscribe.Multiplier"},
		{"Jitter over 1", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{Jitter: 2}}, "Resubscribe.Jitter"},
		{"negative MaxAttempts", false, calls.StreamOptions{Resubscribe: &calls.Resubscribe{MaxAttempts: -1}}, "Resubscribe.MaxAttempts"},
	}
	b := reactortest.NewBackend()
	r := newReactor(t, nil, longTimeouts(reactor.Config{Conn: b}))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var l streamLog
			opts := tc.opts
			if tc.bidi {
				reactor.Bidi(r, chat, &opts, l.chatHandler())
			} else {
				reactor.Watch(r, watch, &testpb.WatchRequest{}, &opts, l.watchHandler())
			}
			r.Tick(time.Second)
			l.checkEnd(t)
			require.ErrorIs(t, l.err, calls.ErrInvalidArgument)
			require.Contains(t, l.err.Error(), tc.field)
			var ce *calls.Error
			require.True(t, errors.As(l.err, &ce) && ce.NotSent(), "%v", l.err)
		})
	}
	require.Zero(t, b.Streams(watch.Path())+b.Streams(chat.Path()), "nothing opened")
}

// TestPolicyForStreamRefused: New refuses a MethodPolicy that names a stream method, with an
// error naming the field, the method and its kind; a unary method's policy is accepted.
func TestPolicyForStreamRefused(t *testing.T) {
	tests := []struct {
		method calls.Descriptor
		want   string // "" for accepted
	}{
		{watch, "Config.Policies[0].Method is /prpctest.TestService/Watch; is a server-streaming method"},
		{chat, "Config.Policies[0].Method is /prpctest.TestService/Chat; is a bidirectional or client-streaming method"},
		{echo, ""},
	}
	for _, tc := range tests {
		t.Run(tc.method.Path(), func(t *testing.T) {
			r, err := reactor.New(reactor.Config{Conn: reactortest.NewBackend(), Policies: []reactor.MethodPolicy{{Method: tc.method, Timeout: time.Second}}})
			if tc.want == "" {
				require.NoError(t, err)
				require.NoError(t, r.Close(context.Background()))
				return
			}
			require.ErrorContains(t, err, tc.want)
		})
	}
}
