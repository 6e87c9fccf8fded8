package reactor

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/testpb"
)

// The deterministic simulation drives the real reactor core — Call and Go, the submission
// ring, the reactor goroutine's turn, the lanes' claims and settlements, Tick, Close — from
// one goroutine, in an order a seeded PCG chooses, on a simulated clock, against a simulated
// transport. The reactor's goroutines are not started: the simulator calls the functions they
// run, one step at a time, and checks every invariant after every step.
// sim_internal_test.go runs the seeds; this file is the world.

// Three methods: simSave's policy is idempotent, so its transport calls may take several
// attempts, as gRPC retries them; simEcho's is not; simRead's coalesces its calls, whose
// requests are often identical (simReads of them), so that calls join flights, and hedges them
// in half the seeds (simHedge).
var (
	simEcho = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpcsim.Sim/Echo")
	simSave = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpcsim.Sim/Save")
	simRead = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpcsim.Sim/Read")
)

// simReads is how many distinct requests simRead's calls make.
const simReads = 2

// Bounds of one seed's run.
const (
	simMinCalls    = 200  // calls the game submits before the host may stop
	simMinEvents   = 2000 // events before the host may stop
	simMaxEvents   = 6000 // events after which the host stops at once
	simFinishSteps = 4000 // steps the finish may take once the host stopped playing
)

// simEpoch is the simulated clock's start.
var simEpoch = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// simClock is a reactor.Clock whose time moves only when the simulator moves it. Its timers
// never fire by themselves: the simulator reads when they are due.
type simClock struct{ now time.Duration }

func (c *simClock) Now() time.Time { return simEpoch.Add(c.now) }

func (c *simClock) NewTimer(d time.Duration) Timer {
	return &simTimer{clock: c, at: c.now + d, active: true}
}

type simTimer struct {
	clock  *simClock
	at     time.Duration
	active bool
}

func (t *simTimer) C() <-chan time.Time { return nil }

func (t *simTimer) Reset(d time.Duration) bool {
	was := t.active
	t.at, t.active = t.clock.now+d, true
	return was
}

func (t *simTimer) Stop() bool {
	was := t.active
	t.active = false
	return was
}

// simConn is the reactor's connection: no lane calls it, since the simulator runs the
// lanes' transport; a stream's goroutine opens its transport stream through it, which waits
// for the simulator (sim_stream_internal_test.go).
type simConn struct{}

func (simConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	panic("simulation: a lane invoked the connection")
}

func (simConn) NewStream(ctx context.Context, _ *grpc.StreamDesc, _ string, _ ...grpc.CallOption) (grpc.ClientStream, error) {
	return simNewStream(ctx)
}

// simForm is how game code submitted a call.
type simForm uint8

const (
	formThen    simForm = iota // Call, with Then and OnError
	formSettled                // Call, with OnSettled
	formGo                     // Go, with its callback
	formNumForms
)

func (f simForm) String() string { return [...]string{"Call+Then/OnError", "Call+OnSettled", "Go"}[f] }

// simCall is one call the simulated game submitted, and what the simulator saw of it.
type simCall struct {
	id           int
	form         simForm
	req          *testpb.EchoRequest // nil for a nil request
	promise      *callcore.Promise[*testpb.EchoResponse]
	rejected     error // the error Call or Go returned at once
	fromCallback bool  // submitted by a callback
	inDrain      bool  // submitted while the host drained
	runs         int   // callback runs (of the callback that ran, for Then/OnError)
	err          error // what the callback got
	starts       int   // lane claims of the call: the start of its transport call, or its joining a flight
	sent         bool  // a transport call carries it: its own, or a flight's it joined or started
	settledAt    int   // its place in the order calls settled, from 1; 0 if rejected
}

// simLane is one invoker lane, and the transport call it runs.
type simLane struct {
	l        *laneState
	busy     bool
	flight   *flight // the flight the lane runs an attempt of, if any; call is its first member
	began    int64   // when the lane began the flight's attempt (beginAttempt)
	stuck    bool    // Close gave up on the lane, a hook of the host holding it: its call was delivered
	w        callqueue.Work
	ctx      *callCtx
	call     *simCall
	failures int           // attempts left that fail with Unavailable, before the last
	next     time.Duration // when the current attempt answers
	outcome  simOutcome
}

// simOutcome is how the transport call ends, if nothing cuts it first.
type simOutcome struct {
	code codes.Code // OK for success
	hang bool       // never answers: only a cancel ends it
}

// simHost is the phase of the simulated host.
type simHost uint8

const (
	hostPlaying  simHost = iota // game logic submits calls
	hostDraining                // no new calls but from callbacks; ticking until Idle
	hostClosing                 // Close began; the context may run out (abort)
	hostClosed                  // Close returned
)

// simWorld is one seed's run.
type simWorld struct {
	seed  uint64
	rng   *rand.Rand
	clock *simClock
	r     *Reactor
	e     *engine
	lanes []*simLane
	turn  simTurn

	calls       []*simCall
	byReq       map[*testpb.EchoRequest]*simCall // every call with a request, by its request
	flightCalls map[*flight]*simFlight           // every flight a lane started
	responses   map[*testpb.EchoResponse]int     // the response messages callbacks got, by call
	resends     int                              // flights sent again for members whose deadlines are later
	// queuedValues are the response messages of the calls queued for Tick, by call.
	queuedValues map[any]int
	settled      []*simCall // admitted calls in the order they were queued for Tick
	delivered    int        // how many of settled have had their callbacks run
	outSeen      int        // entries of the outbox already read into settled
	host         simHost
	aborted      bool
	closeErr     error
	engineDone   bool
	inTick       bool
	backendDown  bool
	backendSlow  bool // every attempt takes tens to hundreds of milliseconds
	chainOdds    int  // 1 in chainOdds callbacks chains a call

	withStreams bool         // the game opens streams (seedHasStreams)
	wait        func()       // waits until every stream goroutine is blocked: synctest.Wait in a seed with streams
	streams     []*simStream // every stream the game opened
	bidis       []*simStream // the Bidi streams among them
	bidiSeen    bidiSeen     // the paths of Bidi's sending the seed reached
	longRuns    int          // OnMessages runs of several messages
	liveStreams []*simStream // those whose receiving goroutine has not returned
	// stuckStreams is set once Close has given up on the stream goroutines still waiting in
	// the transport, as if a hook held them.
	stuckStreams bool
	// streamsWoken is set by a step that may have woken a stream goroutine: the simulator
	// then waits for them, and only then.
	streamsWoken bool

	logging bool     // note events: off for speed, on to report a failure
	events  []string // the events noted
	steps   int
	played  int // the step at which the host stopped playing; 0 while it plays
	// pausedUntil is the step before which the host does not tick, as a host busy elsewhere.
	pausedUntil int
	err         error // the first broken invariant
}

// simTurn is where the reactor goroutine's turn in progress stands: each step of the
// simulator runs one part of it, as other goroutines run between its parts in production.
type simTurn struct {
	phase int
	i     int
}

const (
	turnIdle = iota
	turnAccept
	turnLaneDone
	turnEvents
	turnExpire
	turnHedge
	turnStreams
	turnEnd
	turnStopping // the turn found the reactor done: the lanes stop, then finish
)

// newSimWorld builds a reactor for seed without its goroutines.
func newSimWorld(seed uint64) (*simWorld, error) {
	w := &simWorld{seed: seed, rng: rand.New(rand.NewPCG(seed, 0x5eed0f9c)), clock: &simClock{},
		byReq: make(map[*testpb.EchoRequest]*simCall), responses: make(map[*testpb.EchoResponse]int), queuedValues: make(map[any]int), flightCalls: make(map[*flight]*simFlight)}
	cfg := Config{
		Conn:            simConn{},
		Clock:           w.clock,
		Workers:         1 + w.rng.IntN(3),
		BatchSize:       1 + w.rng.IntN(4),
		MaxOutstanding:  4 + w.rng.IntN(40),
		DefaultTimeout:  time.Duration(1+w.rng.IntN(200)) * time.Millisecond,
		MaxTimeout:      time.Second,
		OnCallbackPanic: func(p any) { w.fail("a callback panicked: %v", p) },
		Policies: []MethodPolicy{
			{Method: simSave, Critical: w.rng.IntN(2) == 0},
			// From the seed, so that the draws stay as they were.
			{Method: simRead, Idempotent: true, Coalesce: true, CoalesceMax: 2 + int(seed%4), CoalesceMaxAge: simCoalesceMaxAge(seed), Hedge: simHedge(seed)},
		},
		// Every other seed checks request ownership, which must see every call leave the
		// owned set however it settles; taken from the seed, so that the draws stay as they
		// were.
		CheckRequestOwnership: seed%2 == 0,
	}
	if cfg.MaxOutstanding >= 10 {
		cfg.CriticalReserve = w.rng.IntN(cfg.MaxOutstanding / 4)
	}
	// Half the seeds limit the calls in flight adaptively, drawn from a generator of their
	// own, so that the other draws stay as they were.
	cfg.AdaptiveLimit = simAdaptiveLimit(seed, cfg.Workers, cfg.Workers*cfg.BatchSize)
	w.chainOdds = 2 + w.rng.IntN(6)
	// simRead is idempotent: with Conn, the connection's service config retries it.
	sc, err := cfg.ServiceConfigJSON()
	if err != nil {
		return nil, err
	}
	cfg.ConnServiceConfig = sc
	r, err := newReactor(cfg)
	if err != nil {
		return nil, err
	}
	w.r = r
	w.e = newEngine(r)
	for inv := range cfg.Workers {
		for range cfg.BatchSize {
			w.lanes = append(w.lanes, &simLane{l: r.newLane(inv)})
		}
	}
	return w, nil
}

// callOf returns the simulated call whose record rec is.
func (w *simWorld) callOf(rec *callcore.Call) *simCall {
	req, _ := rec.Req.(*testpb.EchoRequest)
	return w.byReq[req]
}

// simMessages are the requests' messages, made once for all seeds.
var simMessages []string

func init() {
	simMessages = make([]string, 4096)
	for i := range simMessages {
		simMessages[i] = fmt.Sprint("call ", i)
	}
}

// simMessage returns the message of call id's request.
func simMessage(id int) string {
	if id < len(simMessages) {
		return simMessages[id]
	}
	return fmt.Sprint("call ", id)
}

// fail records the first broken invariant.
func (w *simWorld) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf(format, args...)
	}
}

// note logs an event of the run, if the world keeps a log: a run is deterministic, so a
// failing seed is run again with one to report it.
func (w *simWorld) note(format string, args ...any) {
	if w.logging {
		w.events = append(w.events, fmt.Sprintf("%5d %9v ", w.steps, w.clock.now)+fmt.Sprintf(format, args...))
	}
}

// pct reports true with probability n in 100.
func (w *simWorld) pct(n int) bool { return w.rng.IntN(100) < n }

// submit has game code submit a call: from a callback when fromCallback is set.
func (w *simWorld) submit(fromCallback bool) {
	c := &simCall{id: len(w.calls) + 1, form: simForm(w.rng.IntN(int(formNumForms))), fromCallback: fromCallback, inDrain: w.host == hostDraining}
	w.calls = append(w.calls, c)
	m := simEcho
	switch n := w.rng.IntN(100); {
	case n < 30:
		m = simSave
	case n < 55:
		m = simRead
	}
	switch n := w.rng.IntN(100); {
	case n < 2: // nil: rejected at once
	case n < 5:
		c.req = &testpb.EchoRequest{Message: "\xff"} // does not encode: fails on its lane
	case m == simRead:
		c.req = &testpb.EchoRequest{Message: fmt.Sprint("read ", w.rng.IntN(simReads))}
	default:
		c.req = &testpb.EchoRequest{Message: simMessage(c.id)}
	}
	var opts *calls.Options
	if w.pct(60) {
		opts = &calls.Options{Critical: w.pct(20)}
		switch n := w.rng.IntN(10); {
		case m == simRead && n < 7:
			// A read's deadline is often earlier than one submitted before it, whose
			// transport call it may then join.
			opts.Timeout = time.Duration(1+w.rng.IntN(int(w.r.cfg.DefaultTimeout/time.Millisecond))) * time.Millisecond
		case n < 3:
			opts.Timeout = time.Duration(1+w.rng.IntN(5)) * time.Millisecond
		case n < 8:
			opts.Timeout = time.Duration(1+w.rng.IntN(300)) * time.Millisecond
		case n == 8:
			opts.Timeout = 2 * time.Second // over MaxTimeout: rejected at once
		}
		if w.pct(10) {
			opts.Metadata = map[string][]string{"x-sim": {fmt.Sprint(c.id)}}
		}
	}
	if c.req != nil && m != simRead {
		c.req.DelayMs = int64(c.id) // makes every request but reads unique
	}
	w.send(c, m, opts)
}

// readBurst has game code submit several identical reads at once, as when many players join
// in one tick: they may share one transport call.
func (w *simWorld) readBurst() {
	msg := fmt.Sprint("read ", w.rng.IntN(simReads))
	n := 2 + w.rng.IntN(5)
	for range n {
		c := &simCall{id: len(w.calls) + 1, form: simForm(w.rng.IntN(int(formNumForms))), req: &testpb.EchoRequest{Message: msg}}
		w.calls = append(w.calls, c)
		w.send(c, simRead, nil)
	}
}

// send submits c, a call of m with options opts, in c's form.
func (w *simWorld) send(c *simCall, m *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse], opts *calls.Options) {
	if c.req != nil {
		w.byReq[c.req] = c // names the call, for the simulator, wherever its record goes
	}
	done := func(resp *testpb.EchoResponse, err error) { w.callbackRan(c, resp, err) }
	switch c.form {
	case formGo:
		c.rejected = Go(w.r, m, c.req, opts, done)
	case formSettled:
		p := Call(w.r, m, c.req, opts).OnSettled(done)
		c.promise, c.rejected = (*callcore.Promise[*testpb.EchoResponse])(p), p.Err()
	default:
		p := Call(w.r, m, c.req, opts).
			Then(func(resp *testpb.EchoResponse) { done(resp, nil) }).
			OnError(func(err error) { done(nil, err) })
		c.promise, c.rejected = (*callcore.Promise[*testpb.EchoResponse])(p), p.Err()
	}
	if c.rejected != nil {
		var ce *calls.Error
		if !errors.As(c.rejected, &ce) {
			w.fail("call %d: rejected with %T, not a *calls.Error", c.id, c.rejected)
		}
		if c.inDrain && errors.Is(c.rejected, calls.ErrClosed) {
			// The drain serves what callbacks submit: only Close, which follows it, refuses.
			w.fail("call %d: submitted from a callback during the drain, rejected with %v", c.id, c.rejected)
		}
	}
	if w.logging { // the note's arguments cost a map and several values per call
		w.note("submit call %d (%v, %s%s) → %v", c.id, c.form, m.Path(), map[bool]string{true: ", from a callback"}[c.fromCallback], c.rejected)
	}
}

// callbackRan is every simulated callback: it checks where and when it runs, then plays game
// logic — it spends simulated time and may submit another call.
func (w *simWorld) callbackRan(c *simCall, resp *testpb.EchoResponse, err error) {
	c.runs++
	c.err = err
	if c.runs > 1 {
		w.fail("call %d: its callback ran %d times", c.id, c.runs)
	}
	if !w.inTick {
		w.fail("call %d: its callback ran outside Tick and Close", c.id)
	}
	switch {
	case c.rejected != nil:
		if !errors.Is(err, c.rejected) {
			w.fail("call %d: rejected with %v, its callback got %v", c.id, c.rejected, err)
		}
	case c.settledAt == 0:
		w.fail("call %d: its callback ran before the call was queued for Tick", c.id)
	default:
		w.delivered++
		if c.settledAt != w.delivered {
			w.fail("call %d: delivered %dth, but %dth to settle", c.id, w.delivered, c.settledAt)
		}
	}
	if err == nil && resp.GetMessage() != c.req.GetMessage() {
		w.fail("call %d: got the response %q, another call's", c.id, resp.GetMessage())
	}
	if err == nil {
		if other, ok := w.responses[resp]; ok {
			w.fail("call %d: got the response message call %d got", c.id, other)
		}
		w.responses[resp] = c.id
		resp.Message += " (read)" // game code may change its own response
	}

	w.clock.now += time.Duration(w.rng.IntN(200)) * time.Microsecond // the callback's own work
	if w.host <= hostDraining && w.rng.IntN(w.chainOdds) == 0 {
		w.submit(true)
	}
}

// laneStep advances lane l: an idle lane takes and starts the next call; a busy one answers
// when its attempt is due or its call was cut.
func (w *simWorld) laneStep(sl *simLane) {
	if !sl.busy {
		wk, ok := w.r.work.TryTake(&sl.l.slot)
		if !ok {
			return
		}
		if wk.Attempt {
			w.hedgeStart(sl, wk.C)
			return
		}
		ctx := sl.l.start(wk)
		if ctx == nil {
			w.coalesced(sl, wk)
			return
		}
		c := w.callOf(wk.C)
		sl.busy, sl.w, sl.ctx, sl.call = true, wk, ctx, c
		w.checkLimit()
		c.starts++
		c.sent = true
		if c.starts > 1 {
			w.fail("call %d: started by a lane %d times", c.id, c.starts)
		}
		// The ownership check, as the lane runs it; the game never modifies a request.
		if err := sl.l.checkRequest(wk.C); err != nil {
			w.fail("call %d: its request, which nobody modified, failed the ownership check", c.id)
		}
		// gRPC encodes the request with the lane's codec before it sends anything.
		if _, err := sl.l.codec.Marshal(wk.C.Req); err != nil {
			w.note("lane: call %d does not encode", c.id)
			w.laneFinish(sl, nil, status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err))
			return
		}
		sl.failures = 0
		if wk.C.Ops.Path == simSave.Path() && w.pct(40) {
			sl.failures = 1 + w.rng.IntN(2) // Unavailable first: gRPC retries the idempotent method
		}
		sl.outcome = w.outcome()
		sl.next = w.clock.now + w.latency()
		w.attempt(sl)
		w.note("lane starts call %d (%v, %d failed attempts first)", c.id, sl.outcome, sl.failures)
		return
	}
	if err := sl.ctx.Err(); err != nil {
		// The call was cut: gRPC's call returns promptly with the context's error.
		// A flight's attempts are cut once every member has settled, or at the flight's
		// deadline: the members whose deadlines are later then go on in a resend.
		if f := sl.flight; f != nil && !(errors.Is(err, context.DeadlineExceeded) && w.r.now() >= f.deadline) {
			for _, m := range f.members {
				if m.c.Unsettled(m.gen) {
					w.fail("call %d: the transport call of the flight it joined was cancelled before it settled", w.callOf(m.c).id)
				}
			}
		}
		w.laneFinish(sl, nil, status.FromContextError(err).Err())
		return
	}
	if w.clock.now < sl.next || sl.outcome.hang && sl.failures == 0 {
		return
	}
	if sl.failures > 0 {
		sl.failures--
		sl.next = w.clock.now + w.latency()
		w.attempt(sl)
		w.note("lane: call %d, attempt failed with Unavailable, retried", sl.call.id)
		return
	}
	if sl.outcome.code != codes.OK {
		w.laneFinish(sl, nil, status.Error(sl.outcome.code, simServerFailure))
		return
	}
	var req any
	if sl.flight != nil {
		req = sl.flight.req.Message // the members' records are not read while a flight runs
	} else {
		req = sl.w.C.Req
	}
	resp := &testpb.EchoResponse{}
	resp.Message = req.(*testpb.EchoRequest).GetMessage()
	w.laneFinish(sl, resp, nil)
}

// coalesced is what the simulator sees of a lane whose start returned no transport context:
// the reactor settled the call while it waited, or the call runs as a flight (its method
// coalesces or hedges) and the lane has joined it to one, or started one, which it now runs,
// or failed it.
func (w *simWorld) coalesced(sl *simLane, wk callqueue.Work) {
	if claim, ok := wk.C.Claim(wk.Gen); !ok || claim == callcore.Dropped {
		w.note("lane skips a settled call")
		return
	}
	c := w.callOf(wk.C) // the record is not freed before a Tick
	c.starts++
	if c.starts > 1 {
		w.fail("call %d: started by a lane %d times", c.id, c.starts)
	}
	f := sl.l.takeLead()
	if claim, _ := wk.C.Claim(wk.Gen); f != nil || claim == callcore.Joined {
		c.sent = true
	}
	if f == nil {
		w.checkJoined(wk, c)
		w.note("lane joins call %d to a flight (or fails it)", c.id)
		return
	}
	sl.busy, sl.w, sl.flight, sl.ctx, sl.call = true, wk, f, f.ctx, c
	w.flightCalls[f] = &simFlight{f: f, call: c}
	w.nextAttempt(sl)
	w.note("lane starts a flight for call %d (%v)", c.id, sl.outcome)
}

// attempt is the sending of one attempt of sl's call: never after the call settled, nor
// after every member of the flight it runs settled.
func (w *simWorld) attempt(sl *simLane) {
	if sl.flight != nil {
		for _, m := range sl.flight.members {
			if m.c.Unsettled(m.gen) {
				return
			}
		}
		w.fail("call %d: its flight sent an attempt after every member settled", sl.call.id)
		return
	}
	if !sl.w.C.Unsettled(sl.w.Gen) {
		w.fail("call %d: an attempt was sent after the call settled", sl.call.id)
	}
}

// laneFinish ends sl's transport call with value or err.
func (w *simWorld) laneFinish(sl *simLane, value *testpb.EchoResponse, err error) {
	w.note("lane finishes call %d: %v", sl.call.id, err)
	var next *callCtx
	var nf *flight
	switch {
	case sl.flight != nil && value != nil:
		nf, next = sl.l.finishAttempt(sl.flight, sl.ctx, sl.began, value, nil)
	case sl.flight != nil:
		nf, next = sl.l.finishAttempt(sl.flight, sl.ctx, sl.began, nil, err)
	case value != nil:
		sl.l.finish(sl.w, sl.ctx, value, nil)
	default:
		sl.l.finish(sl.w, sl.ctx, nil, err)
	}
	if next == nil {
		*sl = simLane{l: sl.l}
		return
	}
	if nf != sl.flight { // a resend for the members whose deadlines are later
		w.resent(sl, nf)
		return
	}
	// A non-fatal code: the lane sends the next attempt at once.
	sl.ctx = next
	w.nextAttempt(sl)
	w.note("lane sends hedge %d of call %d at once (%v)", next.attempt, sl.call.id, sl.outcome)
}

// simServerFailure is the message of the statuses the simulated server fails calls with.
const simServerFailure = "simulated failure"

// outcome draws how a transport call ends.
func (w *simWorld) outcome() simOutcome {
	switch n := w.rng.IntN(100); {
	case w.backendDown:
		return simOutcome{code: codes.Unavailable}
	case n < 70:
		return simOutcome{code: codes.OK}
	case n < 85:
		return simOutcome{code: []codes.Code{codes.NotFound, codes.Internal, codes.ResourceExhausted, codes.Unavailable, codes.DeadlineExceeded, codes.PermissionDenied}[w.rng.IntN(6)]}
	default:
		return simOutcome{hang: true}
	}
}

// latency draws how long an attempt takes.
func (w *simWorld) latency() time.Duration {
	if w.backendSlow {
		return time.Duration(20+w.rng.IntN(380)) * time.Millisecond
	}
	if w.pct(80) {
		return time.Duration(w.rng.IntN(5000)) * time.Microsecond
	}
	return time.Duration(w.rng.IntN(400)) * time.Millisecond
}

// timerDue reports whether the reactor goroutine's timer has fired.
func (w *simWorld) timerDue() bool {
	t := w.e.timer.(*simTimer)
	return t.active && t.at <= w.clock.now
}

// turnStep runs the next part of the reactor goroutine's turn, the parts and order of
// engine.turn.
func (w *simWorld) turnStep() {
	e, r := w.e, w.r
	switch w.turn.phase {
	case turnIdle:
		if w.timerDue() {
			e.timer.Stop()
			e.armed = false // as wait does when the timer fires
		}
		e.begin()
		w.turn = simTurn{phase: turnAccept}
		w.note("turn begins: %d events, %d lane reports", len(e.events), len(e.done))
	case turnAccept:
		if e.acceptNext() {
			return
		}
		e.countAccepted()
		w.turn = simTurn{phase: turnLaneDone}
	case turnLaneDone:
		if w.turn.i < len(e.done) {
			e.laneDone(e.done[w.turn.i])
			w.turn.i++
			return
		}
		w.turn = simTurn{phase: turnEvents}
	case turnEvents:
		if w.turn.i < len(e.events) {
			e.handle(&e.events[w.turn.i])
			w.turn.i++
			return
		}
		w.turn = simTurn{phase: turnExpire}
	case turnExpire:
		if !e.expireOne() {
			w.turn = simTurn{phase: turnHedge}
		}
	case turnHedge:
		e.hedge()
		w.turn = simTurn{phase: turnStreams}
	case turnStreams:
		w.streamsWoken = true
		w.streamsTimedOut()
		e.streamsDue()
		w.turn = simTurn{phase: turnEnd}
	case turnEnd:
		if e.end() {
			r.work.Close()
			w.turn = simTurn{phase: turnStopping}
			w.note("turn: the reactor is done; the lanes stop")
			return
		}
		e.arm()
		w.turn = simTurn{phase: turnIdle}
	case turnStopping:
		// waitLanes: the lanes finish their calls, and take what is left in their queue,
		// calls the reactor dropped, before they exit.
		if busy := w.busyLanes(); busy > 0 && !w.workQueued() && w.host == hostClosing && w.pct(20) {
			w.abandonLanes(busy)
			return
		}
		if w.busyLanes() > 0 || w.workQueued() {
			return
		}
		e.finish(0)
		w.engineDone = true
		w.note("the reactor goroutine exits")
	}
}

// abandonLanes is Close giving up on the busy lanes, as if a hook of the host held each of
// them past Close's context and laneGrace: the reactor goroutine delivers their calls and
// exits without them. Each lane runs a call the reactor cut, so it holds it until it reports.
func (w *simWorld) abandonLanes(busy int) {
	r := w.r
	for range busy { // the lanes' exits that finish may wait for: none, if it finds every call
		r.laneExit <- struct{}{}
	}
	w.e.finish(busy)
	if r.stuckLanes != busy {
		w.fail("Close gave up on %d busy lanes, and found %d of them holding a call", busy, r.stuckLanes)
	}
	for _, sl := range w.lanes {
		sl.stuck = sl.busy
	}
	w.engineDone = true
	w.note("Close gives up on %d lanes stuck in a hook; the reactor goroutine exits without them", busy)
}

// turnWanted reports whether the reactor goroutine has something to do, as its wait would
// see: a submission, an event or report, a hedge scheduled, or its timer.
func (w *simWorld) turnWanted() bool {
	if w.turn.phase != turnIdle {
		return true
	}
	r := w.r
	return r.subs.Ready() || r.in.Pending() > 0 || w.hedgesScheduled() || r.dueStreams.pending.Load() || w.timerDue()
}

// tick has the host run Tick with a random budget, and checks the budget on the simulated
// clock.
func (w *simWorld) tick() {
	budget := time.Duration(w.rng.IntN(3000)) * time.Microsecond
	start := w.clock.now
	w.inTick = true
	w.streamsWoken = true
	var rep TickReport
	if w.withStreams && w.pct(10) {
		// A lane is appending to the outbox as the Tick begins: Tick does not wait for it, and
		// delivers only the batch in hand and the host queue; the lane's append then wakes
		// the host. Only in seeds with streams, whose ends and messages must keep their order
		// through it, so that the others run as before.
		w.r.out.Inspect(func([]*callcore.Call) { rep = w.r.Tick(budget) })
		w.r.wakeHost()
		w.note("a lane holds the outbox through the Tick")
	} else {
		rep = w.r.Tick(budget)
	}
	w.inTick = false
	elapsed := w.clock.now - start
	// A Tick delivers at least one call, and may overrun its budget by one callback (each
	// costs under 200 µs of simulated time).
	if slack := budget + 200*time.Microsecond; budget > 0 && elapsed > slack {
		w.fail("Tick(%v) ran for %v, over its budget and one callback", budget, elapsed)
	}
	w.note("Tick(%v): %d delivered, %d left, %v", budget, rep.Delivered, rep.Remaining, elapsed)
}

// readOutbox adds the calls queued for Tick since the last look to the settlement order.
func (w *simWorld) readOutbox() {
	r := w.r
	if r.out.Len() == w.outSeen {
		return // nothing queued since the last look (a swap would have emptied it)
	}
	r.out.Inspect(func(queued []*callcore.Call) {
		if len(queued) < w.outSeen {
			w.outSeen = 0 // Tick swapped the queue out
		}
		for _, rec := range queued[w.outSeen:] {
			if rec.Ops.Path == simWatch.Path() || rec.Ops.Path == simBidi.Path() {
				continue // a stream's carrier: its messages are checked as they are delivered
			}
			c := w.callOf(rec)
			if c == nil {
				w.fail("a record in the delivery queue belongs to no submitted call")
				continue
			}
			if c.settledAt != 0 {
				w.fail("call %d: queued for Tick twice", c.id)
			}
			w.settled = append(w.settled, c)
			c.settledAt = len(w.settled)
			w.checkQueued(rec, c)
		}
		w.outSeen = len(queued)
	})
}

// check verifies the invariants that hold after every step.
func (w *simWorld) check() {
	r := w.r
	if n := r.admitted.Load(); n < 0 || n > int64(r.cfg.MaxOutstanding) {
		w.fail("%d calls admitted, MaxOutstanding is %d", n, r.cfg.MaxOutstanding)
	}
	r.mu.Lock()
	sub, ok, failed, pending := r.counts.submitted, r.counts.succeeded, r.counts.failedTotal, r.counts.pending
	neverSent := r.counts.neverSent
	last, _ := r.latency.last()
	r.mu.Unlock()
	if sub != ok+failed+uint64(pending) || pending < 0 {
		w.fail("Stats: Submitted %d ≠ Succeeded %d + Failed %d + Pending %d", sub, ok, failed, pending)
	}
	if r.owned != nil {
		if n, admitted := r.owned.len(), r.admitted.Load(); int64(n) > admitted {
			w.fail("%d requests owned by calls, but only %d calls admitted", n, admitted)
		}
	}
	if neverSent > failed {
		w.fail("Stats: NeverSent %d > Failed %d", neverSent, failed)
	}
	if last.queue < 0 || last.tickWait < 0 || last.transport < -1 {
		w.fail("the latest delivery's phases are negative: %+v", last)
	}
	w.checkLimitState()
	w.checkHedges()
	if len(w.liveStreams) > 0 {
		w.checkStreams()
	}
	// Between steps no Tick is in progress: the gauge holds a time exactly when a settled
	// call waits for Tick, in the outbox or in the batch in hand.
	_, gauge := r.out.Oldest()
	if waiting := int32(r.out.Len()) > 0 || r.head < len(r.delivery); gauge != waiting {
		w.fail("OldestUndelivered: a settled call waits for Tick: %v; the gauge holds a time: %v", waiting, gauge)
	}
}

// checkClosed verifies that nothing is left once Close has returned.
func (w *simWorld) checkClosed() {
	r := w.r
	for _, c := range w.calls {
		if c.runs != 1 {
			w.fail("call %d (%v): its callback ran %d times by the end", c.id, c.form, c.runs)
		}
	}
	if n := r.admitted.Load(); n != 0 {
		w.fail("after Close, %d calls still hold an admission slot", n)
	}
	if r.owned != nil && r.owned.len() != 0 {
		w.fail("after Close, %d requests are still owned by calls", r.owned.len())
	}
	if !r.hostq.Idle() || int32(r.out.Len()) != 0 || r.head != len(r.delivery) {
		w.fail("after Close, callbacks still wait for a Tick")
	}
	if !r.Idle() {
		w.fail("after Close, the reactor is not idle")
	}
	s := r.Stats()
	if s.Pending != 0 || s.InFlight != 0 || s.Queued != 0 {
		w.fail("after Close, Stats: Pending %d, InFlight %d, Queued %d", s.Pending, s.InFlight, s.Queued)
	}
	if s.Submitted != uint64(len(w.calls)) {
		w.fail("after Close, Stats counts %d calls submitted, the game submitted %d", s.Submitted, len(w.calls))
	}
	var neverStarted, shed uint64
	for _, c := range w.calls {
		switch {
		case errors.Is(c.err, calls.ErrShed):
			shed++
			neverStarted++
		case c.starts == 0:
			neverStarted++
		}
	}
	if s.NeverSent != neverStarted {
		w.fail("after Close, Stats counts %d calls never sent, no lane started or shed %d", s.NeverSent, neverStarted)
	}
	if s.Shed != shed {
		w.fail("after Close, Stats counts %d calls shed, %d callbacks got ErrShed", s.Shed, shed)
	}
	for _, sl := range w.lanes {
		if sl.busy && !sl.stuck {
			w.fail("after Close, a lane still runs a call")
		}
	}
}

// String describes the world's configuration.
func (w *simWorld) String() string {
	c := w.r.cfg
	return fmt.Sprintf("Workers %d × BatchSize %d, MaxOutstanding %d (CriticalReserve %d), DefaultTimeout %v, CheckRequestOwnership %v, %s",
		c.Workers, c.BatchSize, c.MaxOutstanding, c.CriticalReserve, c.DefaultTimeout, c.CheckRequestOwnership, w.limitString())
}

// log returns the last n events, or all of them.
func (w *simWorld) log(n int) string {
	ev := w.events
	if n > 0 && len(ev) > n {
		ev = ev[len(ev)-n:]
	}
	return strings.Join(ev, "\n")
}
