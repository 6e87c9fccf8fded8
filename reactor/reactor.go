// Package reactor runs unary gRPC calls for a game loop without ever blocking it.
//
// New checks a Config, dials the connection (or takes the caller's, Config.Conn) and starts the
// reactor's goroutines. Game code submits calls with Call from any goroutine and gets a
// *calls.Promise at once (or with Go, which takes one callback instead of a promise). One
// reactor goroutine queues admitted calls for a fixed set of invoker goroutines (lanes), which
// take them as they free up, and enforces deadlines from a heap, with one timer. Each call
// settles exactly once, whichever of the response (settled by its lane), the deadline, a
// cancel or Close (settled by the reactor goroutine) comes first. Settled calls wait until the
// host calls Tick on its own goroutine, where their callbacks run in completion order under a
// time budget.
//
//	r, err := reactor.New(reactor.Config{Target: "127.0.0.1:50051", Credentials: reactor.Insecure()})
//	…
//	reactor.Call(r, getPlayer, &pb.GetPlayerRequest{Xuid: xuid}, nil).
//		Then(func(resp *pb.GetPlayerResponse) { /* on the Tick goroutine */ }).
//		OnError(func(err error) { /* timeout, overload, gRPC status, … */ })
//	…
//	// once per server tick, on the game loop goroutine:
//	r.Tick(2 * time.Millisecond)
//
// Between ticks a host may wait on Ready, or set Config.OnReady, to deliver replies without
// waiting for the next tick. Close stops admitting calls, lets those admitted finish within
// a context, runs their callbacks and stops every goroutine the reactor started. Stats
// reports counters, latencies, lane load and each backend's state from any goroutine.
//
// Admission is bounded (Config.MaxOutstanding) and every call has a deadline, so memory stays
// bounded when the backend is slow or down. Every failure is a *calls.Error, which carries
// the gRPC status and matches the sentinel of its condition, if any (see package calls).
// Per-method policies (MethodPolicy) set timeouts, wait-for-ready, retries of idempotent
// methods, a reserve for critical calls, and coalesced or hedged reads. Package loop drives
// Tick for hosts without a game loop; package reactortest has an in-memory backend and a
// manual clock for tests. Watch and Bidi open server and bidirectional streams whose messages
// and end Tick delivers like calls' outcomes, under the same budget, with a bound per stream
// on the messages waiting. For the RPCs prpc does not make, Reactor.Conn hands the reactor's
// connection to grpc-go's generated stubs.
package reactor

import (
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/dial"
	"github.com/trixnew/prpc/internal/limitcheck"
)

// Reactor runs unary gRPC calls for one host goroutine. Create it with New; call Tick from one
// goroutine at a time (normally the game loop), and Shutdown or Close it on that goroutine when
// done. Call, Go, Ready and Stats are safe from any goroutine. A Reactor owns the connection
// New dialled and closes it in Close; a Config.Conn stays its caller's.
type Reactor struct {
	// Its parts, by the goroutines that write them, each declared beside its code. The parts
	// that goroutines write per call sit on cache lines of their own, off the read-mostly
	// ones and off each other's, so that the host's submissions, the lanes' completions and
	// the reactor goroutine's turns do not evict one another's lines.
	fixed      // set by New, read by every goroutine (this file)
	closeState // written as the reactor closes, by Close, Shutdown and the reactor goroutine (close.go)
	_          callqueue.CacheLinePad
	hostSide   // the host goroutine's: admission and delivery (tick.go)
	_          callqueue.CacheLinePad
	wakeup     // settled calls (lanes, the reactor goroutine) and the wake-up flag (wakeHost's callers, Tick) (wakeup.go)
	_          callqueue.CacheLinePad
	gauges     // lanes and the reactor goroutine, per call: what Stats reads as load (tallies.go)
	_          callqueue.CacheLinePad
	tallies                           // the counters, under a mutex: the reactor goroutine, Tick, Call, Go and Stats (tallies.go)
	freed      callqueue.FreedRecords // delivered calls' records, from Tick back to the reactor goroutine
	backends   backendTable           // per-backend counters: lanes and gRPC's balancer (backends.go)
	handshakes dial.HandshakeLog      // the last failed security handshake, for Stats and failed calls
	streams    streamTable            // the streams whose end is not delivered yet (streamopen.go)
	dueStreams streamSchedule         // the streams' timeouts and backoffs, for the one timer (streamdue.go)
}

// fixed is what New fixes: set before the reactor's goroutines start and only read afterwards,
// by every goroutine, but for methods, a cache that any goroutine writes on a miss.
type fixed struct {
	cfg     Config
	conn    grpc.ClientConnInterface
	cc      *grpc.ClientConn // dialled by New and closed by Close; nil with Config.Conn
	clock   Clock
	system  bool      // clock is the system clock
	limited bool      // the adaptive limit is on (not Disabled): lanes signal the ready queue
	epoch   time.Time // clock time at New; call records keep times relative to it
	// ownScheme is the scheme of Target if its resolver supplies the service config (xDS),
	// or "" (meshtarget.Scheme).
	ownScheme string
	allow     map[string]bool         // nil: every method allowed
	policies  map[string]methodPolicy // by method path
	// methods remembers the method last looked up: written, one atomic pointer, by whichever
	// goroutine misses it (a submitter, a lane, Tick), so it sits with the read-mostly fields.
	methods methodCache
	// overloaded holds the messages of overload rejections, made once at New: by whether
	// the call is critical.
	overloaded [2]string
	baseOpts   []grpc.CallOption
	owner      owner
	ownerRef   callcore.OwnerRef // &owner, for promises

	// The queues between the goroutines and what runs on them.
	in       *callqueue.Inbox
	subs     *callqueue.SubmissionRing // admitted calls, from Call and Go to the reactor goroutine
	ready    chan struct{}
	notify   *notifier // calls OnReady; nil without it
	work     *callqueue.ReadyQueue
	loads    []invokerLoad // per invoker, written by its lanes, and by the reactor goroutine for calls it cut
	subconns *dial.SubconnTable
	// The flights of coalesced and hedged methods (flight.go); nil unless a policy coalesces
	// or hedges a method.
	flights *flightTable
	// The due times of hedged calls' next attempts, for the reactor goroutine
	// (hedgeschedule.go); nil unless a policy hedges.
	dueHedges *hedgeSchedule
	// The requests owned by unsettled calls, with Config.CheckRequestOwnership; nil without
	// (see ownership.go).
	owned *ownedRequests
}

// TickReport says what one Tick did.
type TickReport struct {
	// Delivered is the number of settled calls whose callbacks ran, and of stream
	// messages delivered (a run of StreamHandler.OnMessages counts its messages).
	Delivered int
	// Remaining is the number of settled calls and stream messages left for the next Tick
	// because the budget was spent.
	Remaining int
	// Elapsed is the time Tick spent delivering (zero for an idle Tick).
	Elapsed time.Duration
}

// New checks cfg, dials the connection (without waiting for it) and starts the reactor
// goroutine and its invokers. Errors name the Config field at fault.
func New(cfg Config) (*Reactor, error) {
	r, err := newReactor(cfg)
	if err != nil {
		return nil, err
	}
	r.start()
	return r, nil
}

// newReactor is New without the reactor's goroutines.
func newReactor(cfg Config) (*Reactor, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	limit, _ := cfg.resolveLimit() // checked by resolve
	r := &Reactor{
		fixed: fixed{
			cfg:   cfg,
			conn:  cfg.callConn(),
			clock: cfg.Clock,
			epoch: cfg.Clock.Now(),
			in:    callqueue.NewInbox(),
			ready: make(chan struct{}, 1),
			work:  callqueue.NewReadyQueue(limit),
			loads: make([]invokerLoad, cfg.Workers),
		},
		closeState: closeState{
			done: make(chan struct{}),
			// Every lane's exit fits: a lane never waits to exit.
			laneExit: make(chan struct{}, cfg.Workers*cfg.BatchSize),
			abandon:  make(chan struct{}),
		},
	}
	r.limited = limit != nil
	r.owner.r = r
	r.ownerRef.Owner = &r.owner
	r.host.r = r
	r.streams.r = r
	r.dueStreams.r = r
	r.subs = callqueue.NewSubmissionRing(cfg.MaxOutstanding, r.in.Wake())
	r.overloaded = [2]string{r.overloadMessage(false), r.overloadMessage(true)}
	r.hostq.Init()
	if cfg.OnReady != nil {
		r.notify = newNotifier(cfg.OnReady, &r.armed)
	}
	_, r.system = r.clock.(systemClock)
	r.policies, _ = cfg.resolvePolicies() // checked by resolve
	for _, p := range r.policies {
		if p.coalesceMax > 0 || p.hedge != nil {
			r.flights = newFlightTable(r)
		}
		if p.hedge != nil && r.dueHedges == nil {
			r.dueHedges = newHedgeSchedule(r)
		}
	}
	r.counts.failed = make(map[codes.Code]uint64)
	if cfg.CheckRequestOwnership {
		r.owned = newOwnedRequests()
	}
	if len(cfg.Methods) > 0 {
		r.allow = make(map[string]bool, len(cfg.Methods))
		for _, m := range cfg.Methods {
			r.allow[m.Path()] = true
		}
	}
	if r.conn == nil {
		if err := r.dial(); err != nil {
			return nil, err
		}
	}
	r.backends.now = r.now
	r.baseOpts = limitcheck.CallOptions(cfg.Limits)
	return r, nil
}

// Conn returns the connection r calls with, for the RPCs prpc does not make: a stream a
// program reads on a goroutine of its own rather than in Tick (Watch, Bidi), grpc.health.v1, reflection, or any unary call a program wants to make with
// grpc-go's generated stubs (pb.NewLobbyClient(r.Conn())). It is the connection New dialled
// for Target or Targets, with its credentials, limits and service config (balancing and
// retries included), or Config.Conn as given. Safe from any goroutine; it costs nothing.
//
// The type is grpc.ClientConnInterface, what grpc-go's generated stubs take, rather than
// *grpc.ClientConn: it is the same for a dialled connection and for Config.Conn, and it
// keeps Close, which belongs to the reactor, out of reach.
//
// Calls made through it are the caller's own: Call's options, policies and limits do not
// apply to them (the limits of the connection itself, such as the largest header list, do),
// Stats does not count them, MaxOutstanding does not bound them, and their callbacks, if
// any, are the caller's to run. Close and Shutdown do not wait for them: they wait only for
// prpc's calls, then close a connection New dialled, which ends its streams and calls still
// running with codes.Canceled and fails later ones with Canceled at once. Finish them (or
// cancel their contexts) before Close or Shutdown. A Config.Conn is never closed by r.
func (r *Reactor) Conn() grpc.ClientConnInterface {
	if r.cc != nil {
		return r.cc
	}
	return r.cfg.Conn
}

// Ready returns a channel that receives a value when settled calls are waiting for Tick. A
// wake-up is sent at most once per batch of completions that arrive before Tick drains them,
// and again after a Tick that left some behind. Its capacity is one; it is never closed.
func (r *Reactor) Ready() <-chan struct{} { return r.ready }

// owner is the reactor as calls see it (callcore.Owner).
type owner struct{ r *Reactor }

// Cancel implements callcore.Owner.
func (o *owner) Cancel(pos uint32) {
	o.r.in.Push(callqueue.Event{Kind: callqueue.EvCancelPos, Pos: pos})
}

// Redeliver implements callcore.Owner.
func (o *owner) Redeliver(t callcore.Target) { o.r.deliverNext(t) }

// deliverNext queues t, whose call is settled already, for the next Tick through the host
// queue, which no lane touches, and wakes the host unless a wake-up is pending already. Safe
// from any goroutine; it never blocks.
func (r *Reactor) deliverNext(t callcore.Target) {
	r.hostq.Push(t)
	r.wakeHost()
}
