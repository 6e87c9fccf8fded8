package main

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/networkpb/networkpbprpc"
	"github.com/trixnew/prpc/reactor"
)

// maxErrors is the number of call errors a game keeps for its summary.
const maxErrors = 5

// gameConfig configures a game.
type gameConfig struct {
	// Players is the number of players the game waits for: it is done once that many have
	// joined and each has finished (saved, left, or failed).
	Players int
	// SpawnPerTick is the number of players that join on each world tick until Players have
	// joined. Zero spawns none; tests then join players themselves.
	SpawnPerTick int
	// LeaveEvery makes every n-th player leave in the transaction it joins in, before its
	// GetPlayer reply can arrive. Zero: nobody leaves early.
	LeaveEvery int
	// PlayTicks is the number of world ticks a loaded player plays before it saves and leaves.
	PlayTicks int
	// TPS is the world's tick rate, used to turn playtime into seconds.
	TPS int
	// Budget is the time budget of each Tick.
	Budget time.Duration
	// TickCost is how long each world tick keeps the world goroutine busy, standing in for
	// the physics, AI and networking of a real game's tick. Zero: ticks cost nothing.
	TickCost time.Duration
}

// game is the game logic: players join, load their profile with GetPlayer, play a few ticks,
// save it with SavePlayer and leave. Every call is made on the world goroutine, and every
// callback runs there too, because the reactor is ticked only inside w.Do.
type game struct {
	w      *World
	r      *reactor.Reactor
	client *networkpbprpc.DataServiceClient // DataService's calls, through r
	cfg    gameConfig

	tickFn func(*Tx) // g.runTick, made once so that OnReady allocates no method value
	done   chan struct{}

	// scheduled counts the w.Do calls made by OnReady, on the reactor's goroutine.
	scheduled atomic.Uint64

	// Owned by the world goroutine.
	tx             *Tx // the transaction callbacks run in: set while Tick or Shutdown runs
	stopping       bool
	doneClosed     bool
	spawned        int
	finished       int
	leftEarly      int // players that left in the transaction they joined in
	gone           int // callbacks that found their player removed and did nothing
	loaded         int
	saved          int
	getFailed      int
	saveFailed     int
	callbacks      int // call outcomes delivered to the game's callbacks
	outsideWorld   int // callbacks that ran outside a world transaction: must stay 0
	tickRuns       int // Ticks run by functions OnReady scheduled
	ticksOutside   int // of those, Ticks that ran outside the world goroutine: must stay 0
	idleTicks      int // of those, Ticks that found nothing to deliver
	tickDelivered  int // outcomes those Ticks delivered
	panics         int
	errs           []string
	closeDelivered int // outcomes delivered by Shutdown rather than by a Tick
}

// newGame returns a game for w whose calls go through a reactor made from cfg, with
// cfg.OnReady and cfg.OnCallbackPanic set by the game. Start the world with g.onTick
// afterwards.
func newGame(w *World, cfg reactor.Config, gc gameConfig) (*game, error) {
	g := &game{w: w, cfg: gc, done: make(chan struct{})}
	g.tickFn = g.runTick
	// The whole integration: when completions are waiting, schedule one Tick on the world
	// goroutine. The reactor calls OnReady at most once until that Tick drains them, from its
	// own goroutine; Do only queues, so OnReady never blocks.
	cfg.OnReady = g.onReady
	cfg.OnCallbackPanic = g.onPanic
	r, err := reactor.New(cfg)
	if err != nil {
		return nil, err
	}
	g.r = r
	g.client = networkpbprpc.NewDataServiceClient(r)
	return g, nil
}

// onReady is the reactor's OnReady hook.
func (g *game) onReady() {
	g.scheduled.Add(1)
	// Do returns false only once the world is closing, which happens after the reactor was
	// closed; OnReady is not called after Close.
	g.w.Do(g.tickFn)
}

// runTick delivers completed calls on the world goroutine: their callbacks run inside tx.
func (g *game) runTick(tx *Tx) {
	g.tickRuns++
	if !g.w.InWorld() {
		g.ticksOutside++
	}
	g.tx = tx
	rep := g.r.Tick(g.cfg.Budget)
	g.tx = nil
	g.tickDelivered += rep.Delivered
	if rep.Delivered == 0 {
		g.idleTicks++
	}
}

// close shuts the reactor down inside tx, on the world goroutine, as Shutdown requires.
// Shutdown drains first: it runs the callbacks of calls that settle meanwhile, so they too see
// the transaction, and serves the calls they submit, until nothing is left or ctx is done.
func (g *game) close(ctx context.Context, tx *Tx) error {
	g.stopping = true
	before := g.callbacks
	g.tx = tx
	err := g.r.Shutdown(ctx)
	g.tx = nil
	g.closeDelivered = g.callbacks - before
	return err
}

// onPanic is the reactor's OnCallbackPanic hook; it runs on the Tick goroutine.
func (g *game) onPanic(v any) {
	g.panics++
	g.recordError(fmt.Sprintf("callback panicked: %v", v))
}

// onTick is the game logic, run by the world on every tick.
func (g *game) onTick(tx *Tx) {
	if g.stopping {
		return
	}
	for n := min(g.cfg.SpawnPerTick, g.cfg.Players-g.spawned); n > 0; n-- {
		g.join(tx, g.cfg.LeaveEvery > 0 && (g.spawned+1)%g.cfg.LeaveEvery == 0)
	}
	tx.Players(func(h Handle, p *Player) {
		p.Playtime++
		if p.Loaded && !p.Saving && p.Playtime >= g.cfg.PlayTicks {
			g.save(h, p)
		}
	})
	if g.cfg.TickCost > 0 {
		// The rest of a real tick. A sleep keeps the world goroutine busy without burning a
		// core; replies that arrive meanwhile wait for one Tick, scheduled once by OnReady.
		time.Sleep(g.cfg.TickCost)
	}
}

// join spawns a player and asks for its profile. With leave set, the player leaves again in
// the same transaction: its GetPlayer reply can only be delivered by a later Tick, so the
// callback is sure to find no entity.
func (g *game) join(tx *Tx, leave bool) Handle {
	g.spawned++
	p := &Player{XUID: fmt.Sprintf("pushhost-%06d", g.spawned), Name: fmt.Sprintf("player%d", g.spawned)}
	h := tx.Spawn(p)
	// Capture the handle, not p: by the time the reply arrives the player may be gone, and p
	// must not be touched outside a transaction anyway.
	g.client.GetPlayer(&networkpb.GetPlayerRequest{Xuid: p.XUID}, nil).
		Then(func(resp *networkpb.GetPlayerResponse) { g.onLoaded(h, resp) }).
		OnError(func(err error) { g.onFailed(h, false, err) })
	if leave {
		tx.Remove(h)
		g.leftEarly++
	}
	return h
}

// save sends the player's profile; the player leaves once the save is confirmed.
func (g *game) save(h Handle, p *Player) {
	p.Saving = true
	p.Level++
	p.Coins += 10
	req := &networkpb.SavePlayerRequest{Player: &networkpb.Player{
		Xuid:            p.XUID,
		Name:            p.Name,
		Level:           p.Level,
		Coins:           p.Coins,
		PlaytimeSeconds: int64(p.Playtime / max(g.cfg.TPS, 1)),
	}}
	g.client.SavePlayer(req, nil).
		Then(func(resp *networkpb.SavePlayerResponse) { g.onSaved(h, resp) }).
		OnError(func(err error) { g.onFailed(h, true, err) })
}

// callback starts every callback: it counts the outcome, checks that it is delivered inside a
// world transaction, and looks the player up again by handle in that transaction.
func (g *game) callback(h Handle) (*Player, bool) {
	g.callbacks++
	if g.tx == nil || !g.w.InWorld() {
		g.outsideWorld++
		return nil, false
	}
	return g.tx.Player(h)
}

func (g *game) onLoaded(h Handle, resp *networkpb.GetPlayerResponse) {
	p, ok := g.callback(h)
	if !ok {
		// The player left before its profile arrived: nothing to load, nothing to save.
		g.gone++
		g.finish()
		return
	}
	if resp.GetFound() {
		p.Level = resp.GetPlayer().GetLevel()
		p.Coins = resp.GetPlayer().GetCoins()
		p.Version = resp.GetPlayer().GetVersion()
	}
	p.Loaded = true
	g.loaded++
}

func (g *game) onSaved(h Handle, resp *networkpb.SavePlayerResponse) {
	p, ok := g.callback(h)
	g.saved++
	if !ok {
		g.gone++
		g.finish()
		return
	}
	p.Version = resp.GetVersion()
	g.tx.Remove(h) // saved: the player leaves
	g.finish()
}

func (g *game) onFailed(h Handle, saving bool, err error) {
	if saving {
		g.saveFailed++
	} else {
		g.getFailed++
	}
	g.recordError(err.Error())
	if _, ok := g.callback(h); ok {
		g.tx.Remove(h) // a player whose profile cannot be loaded or saved is sent away
	}
	g.finish()
}

func (g *game) recordError(msg string) {
	if len(g.errs) < maxErrors {
		g.errs = append(g.errs, msg)
	}
}

// finish counts a player whose last call has completed, and closes done once every player
// has joined and finished.
func (g *game) finish() {
	g.finished++
	if !g.doneClosed && g.spawned >= g.cfg.Players && g.finished == g.spawned {
		g.doneClosed = true
		close(g.done)
	}
}

// result is what a game did, read after its world has stopped.
type result struct {
	Players, Spawned, Finished, LeftEarly, Gone int
	Loaded, Saved, GetFailed, SaveFailed        int

	Calls     uint64 // calls submitted to the reactor
	Succeeded uint64 // calls that succeeded
	Callbacks int    // outcomes delivered to the game's callbacks

	Scheduled      uint64 // w.Do calls made by OnReady
	TickRuns       int    // Ticks those functions ran
	IdleTicks      int
	TickDelivered  int
	CloseDelivered int

	OutsideWorld, TicksOutside, Panics int

	WorldTicks uint64
	TPS        int
	Errors     []string
	CloseErr   error
	TimedOut   bool
	Elapsed    time.Duration
}

// ok reports whether every player finished and every call succeeded, inside the world.
func (res *result) ok() bool {
	return !res.TimedOut && res.CloseErr == nil &&
		res.Finished == res.Players && res.Spawned == res.Players &&
		res.Calls == res.Succeeded && res.GetFailed == 0 && res.SaveFailed == 0 &&
		res.Panics == 0 && res.OutsideWorld == 0 && res.TicksOutside == 0
}

// play runs a game of gc on a world ticking tps times a second, its calls going through a
// reactor made from cfg, until every player has finished, duration has passed or ctx is done.
// It then closes the reactor inside a final w.Do, waits for that, and stops the world.
func play(ctx context.Context, cfg reactor.Config, gc gameConfig, duration time.Duration) (*result, error) {
	w := NewWorld(gc.TPS)
	g, err := newGame(w, cfg, gc)
	if err != nil {
		w.Close()
		return nil, err
	}
	start := time.Now()
	w.Start(g.onTick)

	timer := time.NewTimer(duration)
	defer timer.Stop()
	timedOut := false
	select {
	case <-g.done:
	case <-timer.C:
		timedOut = true
	case <-ctx.Done():
		timedOut = true
	}

	// Shut down on the world goroutine: Shutdown must run where Tick runs, and it delivers the
	// last callbacks, which need a transaction. Calls still running get at most MaxTimeout.
	closed := make(chan error, 1)
	var worldTicks uint64
	if !w.Do(func(tx *Tx) {
		worldTicks = tx.Tick()
		closed <- g.close(context.WithoutCancel(ctx), tx)
	}) {
		panic("pushhost: world closed before the game")
	}
	closeErr := <-closed
	w.Close()

	st := g.r.Stats()
	return &result{
		Players:        gc.Players,
		Spawned:        g.spawned,
		Finished:       g.finished,
		LeftEarly:      g.leftEarly,
		Gone:           g.gone,
		Loaded:         g.loaded,
		Saved:          g.saved,
		GetFailed:      g.getFailed,
		SaveFailed:     g.saveFailed,
		Calls:          st.Submitted,
		Succeeded:      st.Succeeded,
		Callbacks:      g.callbacks,
		Scheduled:      g.scheduled.Load(),
		TickRuns:       g.tickRuns,
		IdleTicks:      g.idleTicks,
		TickDelivered:  g.tickDelivered,
		CloseDelivered: g.closeDelivered,
		OutsideWorld:   g.outsideWorld,
		TicksOutside:   g.ticksOutside,
		Panics:         g.panics,
		WorldTicks:     worldTicks,
		TPS:            gc.TPS,
		Errors:         g.errs,
		CloseErr:       closeErr,
		TimedOut:       timedOut,
		Elapsed:        time.Since(start),
	}, nil
}
