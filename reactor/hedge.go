package reactor

import (
	"slices"
	"strconv"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/dial"
)

// Hedged calls (MethodPolicy.Hedge). A call of a hedged method runs as a flight (flight.go) of
// its own, or of the calls coalesced with it, which may make several attempts: the lane that
// begins an attempt schedules the next (scheduleHedge); the reactor goroutine queues it once
// its delay has passed without an answer (hedgeschedule.go, engine.hedge), and a free lane runs
// it. An attempt that fails with a non-fatal code has its own lane send the next at once, if
// one is allowed (afterFailure, the decision after a failure). Every member is Joined while the
// attempts run, so the reactor settles a member that times out or is cancelled at once; the
// attempts are cancelled once every member has left. The first attempt to decide the flight
// settles its members with its result and cancels the others. A flight's hedging, and its
// method's budget and latencies, are guarded by the flight table's mutex.

// hedging is the hedging state of one flight, guarded by its table's mutex.
type hedging struct {
	p       *hedgeState
	tried   dial.TriedBackends // the backends the attempts went to, for the picker
	sent    int                // attempts sent: started by a lane, or queued for one
	started int                // attempts lanes have started
	queued  int                // hedges queued that no lane has started
	// token is the record that stands for the flight in the ready queue's entries of its
	// hedges (callqueue.Work.Attempt), made at its first hedge; the flight table maps it to
	// the flight while hedges are queued.
	token *callcore.Call
}

// hedgeState is a hedged method's policy and what its calls have taught: the budget's tokens
// and the latencies of its attempts, for DelayQuantile. Guarded by the flight table's mutex.
type hedgeState struct {
	hedgePolicy
	counters *methodCounters
	tokens   float64
	samples  []time.Duration // the latest successful attempts' transport times, a ring
	next     int             // where the next sample goes once samples is full
	fresh    int             // samples added since quantileDelay was computed
	// quantileDelay is the DelayQuantile of samples, once there are enough.
	quantileDelay time.Duration
}

// newHedging returns the hedging of a new flight of the method hedged as p, whose first attempt
// the starting lane runs now: the call adds its share to the budget.
func newHedging(p *hedgeState) *hedging {
	p.tokens = min(p.tokens+p.budget, hedgeBudgetTokens)
	return &hedging{p: p, sent: 1, started: 1}
}

// delay returns the wait before the flight's next hedge, or false if the method sends none
// yet (DelayQuantile, before enough attempts have succeeded).
func (h *hedging) delay() (time.Duration, bool) {
	p := h.p
	if p.quantile == 0 { // a fixed delay
		return p.delay, true
	}
	if len(p.samples) < hedgeMinSamples {
		return 0, false
	}
	return max(p.delay, p.quantileDelay), true
}

// sample records the transport time of a successful attempt, for DelayQuantile.
func (p *hedgeState) sample(d time.Duration) {
	if p.quantile == 0 {
		return
	}
	if len(p.samples) < hedgeLatencySamples {
		p.samples = append(p.samples, d)
	} else {
		p.samples[p.next] = d
		p.next = (p.next + 1) % hedgeLatencySamples
	}
	// The quantile is recomputed every few samples, not on each: a sort of the window.
	if p.fresh++; p.fresh >= hedgeMinSamples/4 && len(p.samples) >= hedgeMinSamples {
		p.fresh = 0
		sorted := slices.Clone(p.samples)
		slices.Sort(sorted)
		p.quantileDelay = sorted[min(int(p.quantile*float64(len(sorted))), len(sorted)-1)]
	}
}

// spend takes a token for one hedge and reports whether there was one.
func (p *hedgeState) spend() bool {
	if p.tokens < 1 && mutation != "hedge-no-budget" {
		return false
	}
	p.tokens--
	return true
}

// mayHedge reports whether f may send another attempt now: it is undecided, has members, has
// attempts left, and the budget has a token, which it takes.
func (h *hedging) mayHedge(f *flight) bool {
	return !f.closed && f.live > 0 && h.sent < h.p.maxAttempts && h.p.spend()
}

// afterFailure decides what follows an attempt of f that failed with err, f being undecided
// and its deadline not passed: the context of the next attempt, which the failed attempt's lane
// sends at once (a non-fatal code, with attempts and budget left); or wait, if another attempt,
// running or queued, still answers for f. Neither, if err decides f: a fatal code, or the last
// non-fatal one. t.mu held.
func (h *hedging) afterFailure(f *flight, err error) (next *callCtx, wait bool) {
	if !h.p.nonFatalCode(status.Code(err)) {
		return nil, false
	}
	if next := h.nextNow(f); next != nil {
		return next, false
	}
	return nil, len(f.running) > 0 || h.queued > 0
}

// nextNow returns the context of the attempt that the lane whose attempt failed with a
// non-fatal code sends at once, or nil if the budget or the attempts are spent: the other
// attempts then answer for f.
func (h *hedging) nextNow(f *flight) *callCtx {
	if !h.mayHedge(f) {
		return nil
	}
	h.sent++
	return h.begin(f)
}

// begin starts the next attempt of f on the calling lane and returns its context.
func (h *hedging) begin(f *flight) *callCtx {
	h.started++
	ctx := f.attemptCtx(h.started)
	f.running = append(f.running, ctx)
	h.p.counters.hedges.Add(1)
	return ctx
}

// decided records that the attempt with context ctx, ending with err, decided f, and returns
// the other attempts, marked lost, for the caller to cancel once it has released t.mu. A hedge
// that answered OK counts as won.
func (h *hedging) decided(f *flight, ctx *callCtx, err error) []*callCtx {
	if ctx.attempt > 1 && err == nil {
		h.p.counters.hedgesWon.Add(1)
	}
	others := f.running
	f.running = nil
	for _, o := range others {
		o.lost = true // read by its lane under t.mu, once its attempt returns
	}
	if mutation == "hedge-keep-losers" {
		return nil // the bug: the attempts that lost run on
	}
	return others
}

// attemptCtx returns the context of attempt n of f: f's deadline and parent, with
// grpc-previous-rpc-attempts for a hedge, and, if f is hedged, the backends tried for the
// picker.
func (f *flight) attemptCtx(n int) *callCtx {
	parent := f.parent
	if n > 1 {
		parent = metadata.AppendToOutgoingContext(orBackground(parent), "grpc-previous-rpc-attempts", strconv.Itoa(n-1))
	}
	ctx := f.t.r.deadlineCtx(parent, f.deadline)
	ctx.attempt = n
	if f.hedge != nil {
		ctx.pick.Tried = &f.hedge.tried
	}
	return ctx
}

// queueHedge queues attempt n of f for a free lane, if f may still send it; the reactor
// goroutine calls it once its delay has passed (engine.hedge), or the lane that started the
// attempt before, when the delay is zero.
func (t *flightTable) queueHedge(f *flight, n int) {
	t.mu.Lock()
	h := f.hedge
	ok := h.sent < n && h.mayHedge(f)
	if ok {
		h.sent++
		h.queued++
		if h.token == nil {
			h.token = new(callcore.Call)
		}
		t.hedges[h.token] = f
	}
	t.mu.Unlock()
	if ok {
		t.r.work.Push([]callqueue.Work{{C: h.token, Attempt: true, Critical: f.critical}}, t.r.now())
	}
}

// beginHedge starts, on the calling lane, the attempt that a lane took from the ready queue,
// of the flight that token stands for, and returns the flight and the attempt's context; a nil
// context if the flight was decided or every member left meanwhile.
func (t *flightTable) beginHedge(token *callcore.Call) (*flight, *callCtx) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.hedges[token]
	if f.hedge.queued--; f.hedge.queued == 0 {
		delete(t.hedges, token)
	}
	if f.closed && mutation != "hedge-after-decided" {
		return f, nil
	}
	t.running++
	return f, f.hedge.begin(f)
}

// sampleLatency records the transport time d of an attempt of f that succeeded, for its
// method's DelayQuantile.
func (t *flightTable) sampleLatency(f *flight, d time.Duration) {
	t.mu.Lock()
	f.hedge.p.sample(d)
	t.mu.Unlock()
}

// scheduleHedge schedules attempt n of f, hedged, after its delay.
func (l *laneState) scheduleHedge(f *flight, n int) {
	t := f.t
	t.mu.Lock()
	d, ok := f.hedge.delay()
	t.mu.Unlock()
	if ok {
		l.r.dueHedges.schedule(f, n, d)
	}
}
