package loop_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// saveTimeout is the timeout of the scenario's saves: far above what they take (300 ms each,
// 75 of them on 32 lanes), so that a loaded machine running many scenarios at once does not
// time them out; the scenario is about losing none at shutdown.
const saveTimeout = 20 * time.Second

// savePlayer stands for a data service's save; its request's Message is "player:kind".
var savePlayer = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

// saveBackend stores saves after a latency, as a slow data service would; autosaves are held
// until the host has stopped, so that every autosave is in flight when OnStop runs.
type saveBackend struct {
	latency time.Duration
	stopped chan struct{} // closed by OnStop

	mu    sync.Mutex
	saves map[string][]string // kinds saved, by player, in order
}

func newSaveBackend(latency time.Duration) *saveBackend {
	return &saveBackend{latency: latency, stopped: make(chan struct{}), saves: make(map[string][]string)}
}

func (b *saveBackend) handle(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	player, kind, _ := strings.Cut(req.GetMessage(), ":")
	if kind == "autosave" {
		select {
		case <-b.stopped:
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
	latency := time.NewTimer(b.latency) // the backend's own processing time
	defer latency.Stop()
	select {
	case <-latency.C:
	case <-ctx.Done():
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.saves[player] = append(b.saves[player], kind)
	return &testpb.EchoResponse{Message: req.GetMessage()}, nil
}

// world is the game state of the shutdown scenario: players whose saves are chained, so that
// two saves of one player never race. It runs on the loop goroutine only.
type world struct {
	r       *reactor.Reactor
	players int

	inFlight   map[int]bool // a save of the player is in flight
	finalAfter map[int]bool // the player's final save waits for the save in flight
	chained    int          // final saves submitted from a callback
	failed     []error
}

func (w *world) save(p int, kind string) {
	w.inFlight[p] = true
	req := &testpb.EchoRequest{Message: fmt.Sprintf("%d:%s", p, kind)}
	reactor.Call(w.r, savePlayer, req, nil).
		Then(func(*testpb.EchoResponse) {
			w.inFlight[p] = false
			if w.finalAfter[p] {
				w.finalAfter[p] = false
				w.chained++
				w.save(p, "final")
			}
		}).
		OnError(func(err error) { w.failed = append(w.failed, fmt.Errorf("player %d, %s: %w", p, kind, err)) })
}

// stopAll is OnStop: every player leaves with a final save, chained after the save in flight.
func (w *world) stopAll() {
	for p := range w.players {
		if w.inFlight[p] {
			w.finalAfter[p] = true
		} else {
			w.save(p, "final")
		}
	}
}

// runSaves runs the shutdown scenario once on r: every other player has an autosave in flight
// when the host stops; OnStop gives every player a final save, chained after the autosave in
// flight, if any. It returns the world and the loop after Run has returned, with Run's error.
func runSaves(r *reactor.Reactor, b *saveBackend, players int) (*world, *loop.Loop, error) {
	w := &world{r: r, players: players, inFlight: map[int]bool{}, finalAfter: map[int]bool{}}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	l, err := loop.New(loop.Config{
		Reactors:        []loop.Reactor{r},
		ShutdownTimeout: 2 * saveTimeout,
		OnTick: func(uint64) {
			for p := 0; p < players; p += 2 {
				w.save(p, "autosave")
			}
			cancel() // the host stops now: Run stops after this tick
		},
		OnStop: func() {
			w.stopAll()
			close(b.stopped)
		},
	})
	if err != nil {
		_ = r.Close(ctx)
		return nil, nil, err
	}
	return w, l, l.Run(ctx)
}

// A host that stops as package loop documents — final saves from OnStop, chained from the
// callbacks of autosaves still in flight — loses none of them, with a backend that takes
// 300 ms a save, over many concurrent runs, on an in-memory backend and on a gRPC server on
// loopback.
func TestShutdownLosesNoFinalSave(t *testing.T) {
	const (
		players = 50
		latency = 300 * time.Millisecond
		runs    = 10 // of each backend, all at once
	)
	backends := []struct {
		name    string
		reactor func(t *testing.T, b *saveBackend) *reactor.Reactor
	}{
		{"reactortest", func(t *testing.T, b *saveBackend) *reactor.Reactor {
			rb := reactortest.NewBackend()
			reactortest.Handle(rb, savePlayer, b.handle)
			r, err := reactor.New(reactor.Config{Conn: rb, DefaultTimeout: saveTimeout, MaxTimeout: saveTimeout})
			require.NoError(t, err)
			return r
		}},
		{"grpc-go", func(t *testing.T, b *saveBackend) *reactor.Reactor {
			srv := testserver.Start(t)
			srv.SetHandler(b.handle)
			r, err := reactor.New(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure(), DefaultTimeout: saveTimeout, MaxTimeout: saveTimeout})
			require.NoError(t, err)
			return r
		}},
	}
	type outcome struct {
		b   *saveBackend
		w   *world
		l   *loop.Loop
		err error
	}
	var outcomes []*outcome
	var wg sync.WaitGroup
	for _, be := range backends {
		for range runs {
			o := &outcome{b: newSaveBackend(latency)}
			r := be.reactor(t, o.b)
			outcomes = append(outcomes, o)
			wg.Go(func() { o.w, o.l, o.err = runSaves(r, o.b, players) })
		}
	}
	wg.Wait()
	for i, o := range outcomes {
		t.Run(fmt.Sprintf("%s/%d", backends[i/runs].name, i%runs), func(t *testing.T) {
			require.NoError(t, o.err)
			require.Empty(t, o.w.failed)
			require.Equal(t, players/2, o.w.chained, "every autosave was in flight at OnStop")
			for p := range players {
				want := []string{"final"}
				if p%2 == 0 {
					want = []string{"autosave", "final"}
				}
				require.Equal(t, want, o.b.saves[fmt.Sprint(p)], "player %d", p)
			}
			st := o.w.r.Stats()
			require.EqualValues(t, players+players/2, st.Succeeded)
			require.Zero(t, st.CutOff)
			require.Equal(t, uint64(players+players/2), o.l.Stats().Drained)
		})
	}
}

// A host whose callbacks chain calls forever cannot hold Run past ShutdownTimeout: the drain
// ends, and closing settles the last call, cut off or rejected.
func TestShutdownEndsChainsAtShutdownTimeout(t *testing.T) {
	const timeout = 200 * time.Millisecond
	b := reactortest.NewBackend()
	reactortest.Handle(b, savePlayer, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	require.NoError(t, err)
	var chain func()
	var chained int
	chain = func() {
		chained++
		reactor.Call(r, savePlayer, &testpb.EchoRequest{}, nil).Then(func(*testpb.EchoResponse) { chain() })
	}
	ctx, cancel := context.WithCancel(context.Background())
	l, err := loop.New(loop.Config{
		Reactors:        []loop.Reactor{r},
		ShutdownTimeout: timeout,
		OnTick:          func(uint64) { cancel() },
		OnStop:          chain,
	})
	require.NoError(t, err)
	start := time.Now()
	err = l.Run(ctx)
	took := time.Since(start)
	require.GreaterOrEqual(t, took, timeout)
	require.Less(t, took, timeout+patience, "Run ended within its bound")
	if err != nil {
		require.ErrorIs(t, err, context.DeadlineExceeded)
	}
	st := r.Stats()
	require.Zero(t, st.Pending)
	require.Equal(t, st.Submitted, st.Succeeded+st.Closed, "the last call was cut off or rejected")
	require.EqualValues(t, chained, st.Submitted)
	require.Greater(t, l.Stats().Drained, uint64(1), "the chain was served while the drain lasted")
}
