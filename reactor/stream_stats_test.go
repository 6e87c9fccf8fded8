package reactor_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// checkStreamIdentities checks StreamStats' two identities in every method of st, and that
// the totals are the methods' sums.
func checkStreamIdentities(t testing.TB, st reactor.Stats) {
	t.Helper()
	open, waiting := 0, 0
	for path, m := range st.Methods {
		s := m.Streams
		require.Equal(t, s.Received, s.Delivered+uint64(s.Waiting)+s.Replaced+s.Discarded,
			"%s: Received = Delivered + Waiting + Replaced + Discarded: %+v", path, s)
		var ended uint64
		for _, n := range s.Ended {
			ended += n
		}
		require.GreaterOrEqual(t, s.Open, 0, "%s: %+v", path, s)
		require.Equal(t, s.Opened, uint64(s.Open)+ended, "%s: Opened = Open + Σ Ended: %+v", path, s)
		open += s.Open
		waiting += s.Waiting
	}
	require.Equal(t, open, st.StreamsOpen)
	require.Equal(t, waiting, st.MessagesWaiting)
}

// TestStreamStats: each stream's messages and end count in its method's StreamStats, exactly,
// and in none of the calls' counters.
func TestStreamStats(t *testing.T) {
	srv := testserver.Start(t)
	tests := []struct {
		name string
		// run opens the method's streams and ticks until they end.
		run  func(t *testing.T, r *reactor.Reactor)
		path string
		want reactor.StreamStats
	}{{
		name: "OK",
		run: func(t *testing.T, r *reactor.Reactor) {
			var l streamLog
			reactor.Watch(r, watch, &testpb.WatchRequest{Count: 5, Message: "m"}, nil, l.watchHandler())
			waitFor(t, r, l.ended)
		},
		path: "/prpctest.TestService/Watch",
		want: reactor.StreamStats{Opened: 1, Ended: map[codes.Code]uint64{codes.OK: 1}, Received: 5, Delivered: 5},
	}, {
		name: "server's code",
		run: func(t *testing.T, r *reactor.Reactor) {
			var l streamLog
			reactor.Watch(r, watch, &testpb.WatchRequest{Count: 3, Message: "m", FailCode: int32(codes.Unavailable)}, nil, l.watchHandler())
			waitFor(t, r, l.ended)
		},
		path: "/prpctest.TestService/Watch",
		want: reactor.StreamStats{Opened: 1, Ended: map[codes.Code]uint64{codes.Unavailable: 1}, Received: 3, Delivered: 3},
	}, {
		name: "refused at open",
		run: func(t *testing.T, r *reactor.Reactor) {
			var l streamLog
			reactor.Watch(r, watch, (*testpb.WatchRequest)(nil), nil, l.watchHandler())
			st := r.Stats()
			require.Equal(t, 1, st.StreamsOpen, "open until its end is delivered")
			checkStreamIdentities(t, st)
			r.Tick(time.Second)
			require.True(t, l.ended())
		},
		path: "/prpctest.TestService/Watch",
		want: reactor.StreamStats{Opened: 1, Ended: map[codes.Code]uint64{codes.InvalidArgument: 1}},
	}, {
		name: "bidi sent",
		run: func(t *testing.T, r *reactor.Reactor) {
			var l streamLog
			b := reactor.Bidi(r, chat, nil, l.chatHandler())
			for i := range 3 {
				require.NoError(t, b.Send(&testpb.EchoRequest{Message: "m" + itoa(i)}))
			}
			require.NoError(t, b.CloseSend())
			waitFor(t, r, l.ended)
		},
		path: "/prpctest.TestService/Chat",
		want: reactor.StreamStats{Opened: 1, Ended: map[codes.Code]uint64{codes.OK: 1}, Received: 3, Delivered: 3, Sent: 3},
	}, {
		name: "bidi unsent",
		run: func(t *testing.T, r *reactor.Reactor) {
			var l streamLog
			b := reactor.Bidi(r, chat, nil, l.chatHandler())
			require.NoError(t, b.Send(&testpb.EchoRequest{Message: string([]byte{0xff, 0xfe})})) // does not encode
			waitFor(t, r, l.ended)
			require.Len(t, b.Unsent(), 1)
		},
		path: "/prpctest.TestService/Chat",
		want: reactor.StreamStats{Opened: 1, Ended: map[codes.Code]uint64{codes.InvalidArgument: 1}, Unsent: 1},
	}, {
		name: "keep latest",
		run: func(t *testing.T, r *reactor.Reactor) {
			var l streamLog
			reactor.Watch(r, watch, &testpb.WatchRequest{Count: 50, Message: "m"},
				&calls.StreamOptions{KeepLatest: true}, l.watchHandler())
			// Not ticking: the first message waits and the 49 others replace it in turn.
			require.Eventually(t, func() bool {
				s := r.Stats().Methods["/prpctest.TestService/Watch"].Streams
				return s.Received == 50
			}, bound, poll)
			st := r.Stats()
			checkStreamIdentities(t, st)
			s := st.Methods["/prpctest.TestService/Watch"].Streams
			require.Equal(t, 1, s.Waiting)
			require.Equal(t, uint64(49), s.Replaced)
			require.Equal(t, 1, st.MessagesWaiting)
			waitFor(t, r, l.ended)
			require.Equal(t, []string{"m49"}, l.msgs)
		},
		path: "/prpctest.TestService/Watch",
		want: reactor.StreamStats{Opened: 1, Ended: map[codes.Code]uint64{codes.OK: 1}, Received: 50, Delivered: 1, Replaced: 49},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newStreamReactor(t, srv.Addr(), reactor.Config{})
			tt.run(t, r)
			st := r.Stats()
			checkStreamIdentities(t, st)
			require.Equal(t, tt.want, st.Methods[tt.path].Streams)
			require.Zero(t, st.StreamsOpen)
			require.Zero(t, st.MessagesWaiting)
			require.Zero(t, st.Submitted, "streams are not calls")
			require.Zero(t, st.Methods[tt.path].Submitted)
			require.Empty(t, st.Failed)
		})
	}
}

// TestStreamStatsBackpressure: a stream whose host does not tick shows MaxWaiting messages
// waiting and a stall; once cancelled, those messages count as discarded, and the end as
// Canceled.
func TestStreamStatsBackpressure(t *testing.T) {
	const maxWaiting = 4
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	var l streamLog
	s := reactor.Watch(r, watch, forever(), &calls.StreamOptions{MaxWaiting: maxWaiting}, l.watchHandler())
	// The receiver counts a stall as soon as it finds the ring full.
	require.Eventually(t, func() bool {
		return r.Stats().Methods["/prpctest.TestService/Watch"].Streams.Stalls > 0
	}, bound, poll)
	st := r.Stats()
	checkStreamIdentities(t, st)
	require.Equal(t, reactor.StreamStats{Opened: 1, Open: 1, Received: maxWaiting, Waiting: maxWaiting, Stalls: 1},
		st.Methods["/prpctest.TestService/Watch"].Streams)
	require.Equal(t, 1, st.StreamsOpen)
	require.Equal(t, maxWaiting, st.MessagesWaiting)
	require.Zero(t, st.Pending, "streams are not calls")

	s.Cancel()
	waitFor(t, r, l.ended)
	require.Empty(t, l.msgs)
	st = r.Stats()
	checkStreamIdentities(t, st)
	require.Equal(t, reactor.StreamStats{Opened: 1, Ended: map[codes.Code]uint64{codes.Canceled: 1},
		Received: maxWaiting, Discarded: maxWaiting, Stalls: 1},
		st.Methods["/prpctest.TestService/Watch"].Streams)
}

// TestStreamStatsConcurrent: snapshots read while streams run, deliver, replace, stall,
// send and are cancelled all hold StreamStats' identities, and no counter ever decreases.
func TestStreamStatsConcurrent(t *testing.T) {
	srv := testserver.Start(t)
	r := newStreamReactor(t, srv.Addr(), reactor.Config{})
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var snapshots int
	wg.Add(1)
	go func() {
		defer wg.Done()
		prev := map[string]reactor.StreamStats{}
		for {
			select {
			case <-stop:
				return
			default:
			}
			st := r.StatsWithoutPercentiles()
			snapshots++
			checkStreamIdentities(t, st)
			for path, m := range st.Methods {
				s, p := m.Streams, prev[path]
				for _, c := range [][2]uint64{{p.Opened, s.Opened}, {p.Received, s.Received}, {p.Delivered, s.Delivered},
					{p.Replaced, s.Replaced}, {p.Discarded, s.Discarded}, {p.Stalls, s.Stalls}, {p.Sent, s.Sent}, {p.Unsent, s.Unsent}} {
					if c[1] < c[0] {
						t.Errorf("%s: a counter decreased: %+v, then %+v", path, p, s)
					}
				}
				for code, n := range p.Ended {
					if s.Ended[code] < n {
						t.Errorf("%s: Ended decreased: %+v, then %+v", path, p, s)
					}
				}
				prev[path] = s
			}
		}
	}()

	const rounds = 20
	var logs []*streamLog
	for i := range rounds {
		var w, k, b streamLog
		logs = append(logs, &w, &k, &b)
		ws := reactor.Watch(r, watch, forever(), &calls.StreamOptions{MaxWaiting: 2}, w.watchHandler())
		reactor.Watch(r, watch, &testpb.WatchRequest{Count: 30, Message: "k"}, &calls.StreamOptions{KeepLatest: true}, k.watchHandler())
		bs := reactor.Bidi(r, chat, nil, b.chatHandler())
		for j := range 5 {
			require.NoError(t, bs.Send(&testpb.EchoRequest{Message: "b" + itoa(j)}))
		}
		require.NoError(t, bs.CloseSend())
		waitFor(t, r, func() bool { return len(w.msgs) >= i%3 })
		r.Tick(0)
		ws.Cancel()
	}
	waitFor(t, r, func() bool {
		for _, l := range logs {
			if !l.ended() {
				return false
			}
		}
		return true
	})
	close(stop)
	wg.Wait()
	require.Positive(t, snapshots)
	st := r.Stats()
	checkStreamIdentities(t, st)
	w, c := st.Methods["/prpctest.TestService/Watch"].Streams, st.Methods["/prpctest.TestService/Chat"].Streams
	require.Equal(t, uint64(2*rounds), w.Opened)
	require.Equal(t, uint64(rounds), w.Ended[codes.Canceled], "%v", w.Ended)
	require.Equal(t, uint64(rounds), w.Ended[codes.OK])
	require.Equal(t, uint64(rounds), c.Ended[codes.OK])
	require.Equal(t, uint64(5*rounds), c.Sent)
	require.Equal(t, uint64(5*rounds), c.Delivered)
	require.Zero(t, st.StreamsOpen)
	require.Zero(t, st.MessagesWaiting)
}
