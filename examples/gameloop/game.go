package main

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/networkpb/networkpbprpc"
)

// The world and its players are game state, and game state is touched only on the loop
// goroutine: the loop runs OnTick and OnStop there, and the reactor runs every promise
// callback there too, inside the Tick and Close calls the loop makes. That is the point of
// prpc: the game code needs no locks, no channels and no atomics, and a reply can never race
// with a tick. (After the loop returns, run reads the world on the same goroutine.)

// phase is where a player is in its session cycle.
type phase uint8

const (
	offline phase = iota // not in the game; joins again at rejoinAt
	joining              // its GetPlayer is in flight
	online               // playing
)

// snapshot is the part of a profile that the verification compares.
type snapshot struct {
	coins int64
	level int32
}

// expectation is what the backend should hold for a player, as far as the game knows.
type expectation uint8

const (
	expectUnknown expectation = iota // never read nor saved: anything (an external backend may hold an old profile)
	expectAbsent                     // GetPlayer found nothing, and no save has succeeded since
	expectPresent                    // the profile in player.saved
)

// player is one simulated player.
type player struct {
	xuid, name string

	phase     phase
	coins     int64
	level     int32
	playTicks int64 // total playtime, in ticks
	dirty     bool  // coins or level changed since the last save was submitted

	rejoinAt uint64 // tick at which an offline player joins again
	leaveAt  uint64 // tick at which an online player leaves
	saveAt   uint64 // tick of the next autosave of an online player

	saving      bool // a SavePlayer is in flight: at most one per player, so saves land in order
	finalQueued bool // the player left while saving: submit its final save from that save's callback

	expect  expectation
	saved   snapshot // with expectPresent: the profile of the last save that succeeded (or the one loaded)
	version int64    // the profile version the backend last reported
}

// counters are the world's event counts, reported in the summary.
type counters struct {
	joins, joinsFound, joinsNew, joinsFailed, joinsAbandoned uint64
	sessions                                                 uint64
	autosaves, finalSaves                                    uint64 // saves submitted, by kind
	savesOK, savesFailed                                     uint64
	autosavesSkipped                                         uint64 // due while a save was in flight; the player stays dirty
	autosavesClean                                           uint64 // due with nothing changed: not sent
	finalsQueued                                             uint64 // left while a save was in flight
	staleLoads                                               uint64 // a join loaded something other than the last save
	versionSkips                                             uint64 // a save's version was not the previous one + 1
	panics                                                   uint64
}

// world is the game: its players and what they do each tick. See the comment at the top of
// this file for its threading rule.
type world struct {
	data     *networkpbprpc.DataServiceClient
	rng      *rand.Rand
	tps      int
	autosave uint64 // autosave interval, in ticks
	log      *errLog

	players  []*player
	now      uint64 // number of the current tick
	online   int    // players online
	stopping bool   // OnStop has run: a join whose reply arrives in the drain is abandoned
	board    leaderboard
	c        counters
}

// xuidBase is the first XUID: player n has XUID xuidBase+n, in the range of real Xbox user IDs.
const xuidBase = 2535400000000000

// newWorld returns a world of cfg.players offline players, who join one after another over
// the first two seconds.
func newWorld(cfg *config, log *errLog) *world {
	w := &world{
		rng: rand.New(rand.NewPCG(cfg.seed, 0x9e3779b97f4a7c15)),
		tps: cfg.tps,
		log: log,
	}
	w.autosave = max(1, w.ticks(cfg.autosave))
	joinSpread := max(1, w.ticks(2*time.Second))
	w.players = make([]*player, cfg.players)
	for i := range w.players {
		n := i + 1
		w.players[i] = &player{
			xuid: strconv.FormatUint(xuidBase+uint64(n), 10),
			name: fmt.Sprintf("Player%03d", n),
			// Evenly staggered: player i joins at a random tick of the i-th slot.
			rejoinAt: (uint64(i)*joinSpread)/uint64(cfg.players) + w.rng.Uint64N(max(1, joinSpread/uint64(cfg.players))),
		}
	}
	return w
}

// ticks converts d to a number of ticks, rounding down.
func (w *world) ticks(d time.Duration) uint64 {
	return uint64(d * time.Duration(w.tps) / time.Second)
}

// randTicks returns a random number of ticks from lo to hi.
func (w *world) randTicks(lo, hi time.Duration) uint64 {
	a, b := w.ticks(lo), w.ticks(hi)
	return a + w.rng.Uint64N(b-a+1)
}

// tick runs the game logic of tick n. Skipped ticks take no number (see loop.Run), so game
// time is counted in ticks run, as Minecraft counts it.
func (w *world) tick(n uint64) {
	w.now = n
	for _, p := range w.players {
		switch p.phase {
		case offline:
			// Wait for a final save still in flight, so the join reads what it wrote.
			if n >= p.rejoinAt && !p.saving {
				w.join(p)
			}
		case online:
			w.play(p)
			switch {
			case n >= p.leaveAt:
				w.leave(p)
			case n >= p.saveAt:
				p.saveAt = n + w.autosave
				w.autosaveDue(p)
			}
		}
	}
}

// play advances one player by one tick: now and then a few coins, more rarely a level.
func (w *world) play(p *player) {
	p.playTicks++
	if w.rng.IntN(8) == 0 {
		p.coins += int64(1 + w.rng.IntN(5))
		p.dirty = true
	}
	if w.rng.IntN(5*w.tps) == 0 { // about one level every 5 s
		p.level++
		p.dirty = true
	}
}

// enter puts a player whose profile has been loaded into the game.
func (w *world) enter(p *player) {
	p.phase = online
	w.online++
	p.leaveAt = w.now + w.randTicks(3*time.Second, 8*time.Second)
	p.saveAt = w.now + 1 + w.rng.Uint64N(w.autosave) // staggered
}

// leave takes a player out of the game and saves it one last time: at once, or, if a save
// is in flight, from that save's callback.
func (w *world) leave(p *player) {
	p.phase = offline
	w.online--
	w.c.sessions++
	p.rejoinAt = w.now + w.randTicks(time.Second, 2*time.Second)
	if p.saving {
		p.finalQueued = true
		w.c.finalsQueued++
		return
	}
	w.save(p, true)
}

// autosaveDue handles a player's autosave time.
func (w *world) autosaveDue(p *player) {
	switch {
	case !p.dirty:
		w.c.autosavesClean++
	case p.saving:
		w.c.autosavesSkipped++ // still dirty: the next autosave or the final save covers it
	default:
		w.save(p, false)
	}
}

// stopAll is the loop's OnStop: every online player leaves, with its final save, nobody
// joins any more, and the leaderboard's stream ends. Calling it again does nothing more.
//
// A player with a save in flight gets its final save from that save's callback, so that two
// saves of one player are never in flight at once (the older could land last). The loop
// drains the reactor after OnStop, so such a chained save is served like any other.
func (w *world) stopAll() {
	w.stopping = true
	w.stopWatching()
	for _, p := range w.players {
		if p.phase == online {
			w.leave(p)
		}
	}
}
