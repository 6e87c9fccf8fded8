package main

import (
	"sync"
	"time"
)

// Handle identifies an entity of a World. Handles are never reused, so a handle kept after its
// entity was removed finds nothing rather than another entity. Code that outlives a
// transaction, such as a promise callback, keeps a Handle and looks the entity up again in the
// transaction it runs in.
type Handle uint64

// Player is the one kind of entity in this example. It belongs to the world goroutine: read and
// change it only inside a transaction, and never keep the pointer beyond it.
type Player struct {
	XUID    string
	Name    string
	Level   int32
	Coins   int64
	Version int64 // the version SavePlayer returned, 0 until saved

	// Playtime counts the world ticks the player has been in the world.
	Playtime int
	// Loaded is set once the player's profile arrived from the data service.
	Loaded bool
	// Saving is set once the player's profile has been sent to the data service.
	Saving bool
}

// Tx is a transaction: access to a World's state, valid only while the function it was passed
// to runs on the world goroutine. Using a Tx after that function returned panics.
type Tx struct {
	w *World
}

func (tx *Tx) world() *World {
	if tx.w == nil {
		panic("pushhost: Tx used after its transaction ended")
	}
	return tx.w
}

// Tick returns the number of world ticks run so far.
func (tx *Tx) Tick() uint64 { return tx.world().tick }

// Spawn adds p to the world and returns its handle.
func (tx *Tx) Spawn(p *Player) Handle {
	w := tx.world()
	w.next++
	w.entities[w.next] = p
	return w.next
}

// Player returns the player of h, or false if there is none: h was never spawned, or its
// player has been removed.
func (tx *Tx) Player(h Handle) (*Player, bool) {
	p, ok := tx.world().entities[h]
	return p, ok
}

// Remove removes the entity of h, and reports whether there was one.
func (tx *Tx) Remove(h Handle) bool {
	w := tx.world()
	_, ok := w.entities[h]
	delete(w.entities, h)
	return ok
}

// Players calls fn for each player in the world, in no particular order. fn must not spawn or
// remove entities.
func (tx *Tx) Players(fn func(Handle, *Player)) {
	for h, p := range tx.world().entities {
		fn(h, p)
	}
}

// Len returns the number of entities in the world.
func (tx *Tx) Len() int { return len(tx.world().entities) }

// World is a minimal host executor in the style of Dragonfly's world: one goroutine owns all
// world state; Do queues a function to run on it; and a ticker runs the game logic on the same
// goroutine at a fixed rate. Because everything that touches the state runs on that goroutine,
// the state needs no locks.
//
// Create a World with NewWorld, start it with Start and stop it with Close.
type World struct {
	period time.Duration

	mu     sync.Mutex
	queue  []func(*Tx) // guarded by mu
	closed bool        // guarded by mu

	wake chan struct{} // capacity 1: "the queue is not empty"
	quit chan struct{} // closed by Close
	done chan struct{} // closed when the world goroutine has returned

	started bool // set by Start, read by Close; both on the owner's goroutine

	// Owned by the world goroutine.
	onTick   func(*Tx)
	tick     uint64
	entities map[Handle]*Player
	next     Handle
	running  []func(*Tx)
	inWorld  bool
}

// NewWorld returns a World that will tick tps times per second once started.
func NewWorld(tps int) *World {
	return &World{
		period:   time.Second / time.Duration(tps),
		wake:     make(chan struct{}, 1),
		quit:     make(chan struct{}),
		done:     make(chan struct{}),
		entities: make(map[Handle]*Player),
	}
}

// Start starts the world goroutine, which calls onTick at the World's rate and runs the
// functions queued with Do in between. Functions queued before Start run once it starts.
// Start must be called at most once.
func (w *World) Start(onTick func(*Tx)) {
	w.onTick = onTick
	w.started = true
	go w.run()
}

// Do queues fn to run on the world goroutine with a transaction of its own, after the
// functions queued before it, and reports whether it was queued: once Close has begun, Do
// drops fn and returns false. Do never waits for the world goroutine (it takes a mutex held
// only to append to or swap the queue), so it is safe from any goroutine, including from a
// function running on the world goroutine and from prpc's OnReady hook.
func (w *World) Do(fn func(*Tx)) bool {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	w.queue = append(w.queue, fn)
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default: // a wake-up is already pending
	}
	return true
}

// InWorld reports whether the caller is running inside a transaction on the world goroutine.
// The flag it reads is a plain field that only the world goroutine writes, so call it only
// where the answer is expected to be true: read from any other goroutine it is a data race,
// which the race detector reports. The example's callbacks use it to check that prpc ran them
// where they belong.
func (w *World) InWorld() bool { return w.inWorld }

// Close stops the world: it stops accepting functions (Do returns false from then on), runs the
// functions already queued, stops the world goroutine and waits for it to return. Close must
// not be called on the world goroutine. It may be called more than once.
func (w *World) Close() {
	w.mu.Lock()
	already := w.closed
	w.closed = true
	w.mu.Unlock()
	if !already {
		close(w.quit)
	}
	if w.started {
		<-w.done
	}
}

func (w *World) run() {
	defer close(w.done)
	ticker := time.NewTicker(w.period)
	defer ticker.Stop()
	for {
		select {
		case <-w.wake:
			w.runQueued()
		case <-ticker.C:
			w.tick++
			w.exec(w.onTick)
		case <-w.quit:
			// Do refuses new functions now; run what was queued before, including what those
			// functions queue in turn before Close set closed.
			for w.runQueued() {
			}
			return
		}
	}
}

// runQueued runs the functions queued so far, in order, and reports whether there were any.
func (w *World) runQueued() bool {
	w.mu.Lock()
	w.queue, w.running = w.running[:0], w.queue
	w.mu.Unlock()
	for i, fn := range w.running {
		w.running[i] = nil
		w.exec(fn)
	}
	return len(w.running) > 0
}

// exec runs fn in a transaction of its own, with the in-world flag set.
func (w *World) exec(fn func(*Tx)) {
	if fn == nil {
		return
	}
	tx := &Tx{w: w}
	w.inWorld = true
	defer func() {
		w.inWorld = false
		tx.w = nil
	}()
	fn(tx)
}
