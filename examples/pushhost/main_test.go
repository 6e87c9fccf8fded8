package main

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/networkpb/networkpbprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// longWait bounds waits that end as soon as the awaited event happens; it only turns a hang
// into a failure, so it is far above anything a run needs, even under -race on a machine
// busy with other work.
const longWait = 30 * time.Second

func TestRunSucceeds(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(t.Context(), []string{"-players", "30", "-duration", longWait.String(), "-tick-cost", "0"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", &stdout, &stderr)
	out := stdout.String()
	require.Contains(t, out, "57 calls, 57 callbacks") // 30 GetPlayer + 27 SavePlayer
	require.Contains(t, out, "3 players left before their GetPlayer reply; 3 callbacks found no entity")
	require.Contains(t, out, "ok: 30 of 30 players finished")
}

func TestRunRejectsBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nope"},
		{"-players", "0"},
		{"-duration", "0s"},
		{"-leave-every", "-1"},
		{"-tps", "0"},
		{"-tick-cost", "-1ms"},
		{"extra"},
	} {
		var stdout, stderr bytes.Buffer
		require.Equal(t, 2, run(t.Context(), args, &stdout, &stderr), "args %q", args)
		require.Empty(t, stdout.String(), "args %q", args)
		require.NotEmpty(t, stderr.String(), "args %q", args)
	}
}

// fakeDataService registers GetPlayer and SavePlayer handlers on a new in-memory backend.
// getGate, if not nil, is called by every GetPlayer handler before it replies.
func fakeDataService(getGate func(ctx context.Context, xuid string)) *reactortest.Backend {
	b := reactortest.NewBackend()
	reactortest.Handle(b, networkpbprpc.DataService_GetPlayer, func(ctx context.Context, req *networkpb.GetPlayerRequest) (*networkpb.GetPlayerResponse, error) {
		if getGate != nil {
			getGate(ctx, req.GetXuid())
		}
		return &networkpb.GetPlayerResponse{}, nil // not found: a new player
	})
	reactortest.Handle(b, networkpbprpc.DataService_SavePlayer, func(_ context.Context, req *networkpb.SavePlayerRequest) (*networkpb.SavePlayerResponse, error) {
		return &networkpb.SavePlayerResponse{Version: 1}, nil
	})
	return b
}

// TestPlayTicksOnlyOnTheWorld plays a whole game over an in-memory backend and checks the
// integration's contract: every Tick is one scheduled by OnReady and run by the world, every
// callback runs inside a world transaction, and OnReady schedules at most one Tick per
// completion.
func TestPlayTicksOnlyOnTheWorld(t *testing.T) {
	res, err := play(t.Context(), reactor.Config{Conn: fakeDataService(nil)}, gameConfig{
		Players: 100, SpawnPerTick: 25, LeaveEvery: 10, PlayTicks: 1, TPS: 100, Budget: time.Second,
	}, longWait)
	require.NoError(t, err)
	require.True(t, res.ok(), "%+v", res)
	require.Equal(t, uint64(190), res.Calls) // 100 GetPlayer + 90 SavePlayer
	require.Equal(t, 190, res.Callbacks)

	require.GreaterOrEqual(t, res.Scheduled, uint64(1))
	require.LessOrEqual(t, res.Scheduled, uint64(res.Callbacks))
	require.Equal(t, int(res.Scheduled), res.TickRuns, "every OnReady must schedule exactly one Tick, and every one must run")
	require.Zero(t, res.TicksOutside)
	require.Zero(t, res.OutsideWorld)
	require.Equal(t, res.Callbacks, res.TickDelivered+res.CloseDelivered)
	require.Equal(t, 10, res.Gone)
}

// TestOnReadyCoalesces holds the world goroutine while a burst of calls completes and checks
// that the burst costs a handful of scheduled Ticks, not one per completion.
func TestOnReadyCoalesces(t *testing.T) {
	const n = 50
	arrived := make(chan struct{}, n)
	b := fakeDataService(func(context.Context, string) { arrived <- struct{}{} })
	w := NewWorld(20)
	// One invoker with one slot: call k+1 reaches the backend only after the reactor has
	// settled call k.
	g, err := newGame(w, reactor.Config{Conn: b, Workers: 1, BatchSize: 1}, gameConfig{Players: n, TPS: 20, Budget: time.Second})
	require.NoError(t, err)
	w.Start(g.onTick) // SpawnPerTick is 0: the world's ticks do nothing

	held, release := make(chan struct{}), make(chan struct{})
	require.True(t, w.Do(func(*Tx) { close(held); <-release }))
	<-held

	delivered := 0 // world-owned
	all := make(chan struct{})
	for range n {
		g.client.GetPlayer(&networkpb.GetPlayerRequest{Xuid: "x"}, nil).Then(func(*networkpb.GetPlayerResponse) {
			if !w.InWorld() {
				t.Error("callback outside the world goroutine")
			}
			if delivered++; delivered == n {
				close(all)
			}
		})
	}
	for range n {
		<-arrived
	}
	// The n-th call has reached the backend, so the reactor has settled calls 1..n-1 (each in
	// the turn that handed the next one out) and queued for Tick at least 1..n-2 (a turn
	// queues its settlements at its end). Only the first of them called OnReady.
	close(release)
	select {
	case <-all:
	case <-time.After(longWait):
		t.Fatal("callbacks did not all run")
	}
	closeGame(t, w, g)

	// One Tick for the burst, plus at most one for each of the last two calls if they were
	// queued after that Tick started. Scheduling per completion would make it n.
	require.GreaterOrEqual(t, g.scheduled.Load(), uint64(1))
	require.LessOrEqual(t, g.scheduled.Load(), uint64(3))
	require.Equal(t, int(g.scheduled.Load()), g.tickRuns)
	require.Zero(t, g.ticksOutside)
	require.Equal(t, n, g.tickDelivered)
}

// TestCallbackForDespawnedPlayerDoesNothing has a player leave after its GetPlayer request
// reached the server and before the reply, next to a player that stays.
func TestCallbackForDespawnedPlayerDoesNothing(t *testing.T) {
	var arrivals sync.WaitGroup
	arrivals.Add(2)
	reply := make(chan struct{})
	b := fakeDataService(func(ctx context.Context, _ string) {
		arrivals.Done()
		select {
		case <-reply:
		case <-ctx.Done():
		}
	})
	w := NewWorld(50)
	g, err := newGame(w, reactor.Config{Conn: b}, gameConfig{Players: 2, PlayTicks: 1, TPS: 50, Budget: time.Second})
	require.NoError(t, err)
	w.Start(g.onTick)

	joined := make(chan Handle, 1)
	require.True(t, w.Do(func(tx *Tx) {
		joined <- g.join(tx, false) // leaves below
		g.join(tx, false)           // stays, plays a tick, saves and leaves
	}))
	leaver := <-joined
	arrivals.Wait() // both requests reached the server; neither has a reply

	removed := make(chan bool, 1)
	require.True(t, w.Do(func(tx *Tx) { removed <- tx.Remove(leaver) }))
	require.True(t, <-removed)
	close(reply)

	select {
	case <-g.done: // both players finished: the leaver's callback ran, the stayer saved
	case <-time.After(longWait):
		t.Fatal("players did not finish")
	}
	closeGame(t, w, g)

	require.Zero(t, g.panics)
	require.Zero(t, g.outsideWorld)
	require.Equal(t, 1, g.gone, "the leaver's callback must find no entity")
	require.Equal(t, 1, g.loaded, "the stayer's callback must find its entity")
	require.Equal(t, 1, g.saved)
	require.Equal(t, 1, b.Calls(networkpbprpc.DataService_SavePlayer.Path()), "only the stayer saves")
}

// TestTxPanicsOutsideItsTransaction checks that a Tx kept beyond its function cannot reach
// the world's state, which is why callbacks keep handles and get a fresh Tx.
func TestTxPanicsOutsideItsTransaction(t *testing.T) {
	w := NewWorld(20)
	w.Start(nil)
	defer w.Close()
	kept := make(chan *Tx, 1)
	require.True(t, w.Do(func(tx *Tx) { kept <- tx }))
	tx := <-kept
	// The world ends a transaction after its function returns; the next one starts later.
	next := make(chan struct{})
	require.True(t, w.Do(func(*Tx) { close(next) }))
	<-next
	require.PanicsWithValue(t, "pushhost: Tx used after its transaction ended", func() { tx.Len() })
}

// closeGame closes g's reactor inside a final transaction, waits for it, and stops the world.
func closeGame(t *testing.T, w *World, g *game) {
	t.Helper()
	closed := make(chan error, 1)
	require.True(t, w.Do(func(tx *Tx) { closed <- g.close(context.Background(), tx) }))
	require.NoError(t, <-closed)
	w.Close()
}
