package reactor

import (
	"math/rand/v2"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/internal/callcore"
)

// The simulation's hedged reads (MethodPolicy.Hedge): the policy a seed draws for simRead,
// the hedges lanes schedule for the reactor goroutine, whose turn queues them once due (its
// step turnHedge), and the invariants hedging must keep.

// simHedge returns the hedging of simRead in seed's reactor: none for half the seeds,
// otherwise random attempts, delay, budget and non-fatal codes. It draws from a generator of
// its own, so that the other draws stay as they were.
func simHedge(seed uint64) *HedgePolicy {
	rng := rand.New(rand.NewPCG(seed, 0x4ed6e))
	if rng.IntN(2) == 0 {
		return nil
	}
	h := &HedgePolicy{MaxAttempts: 2 + rng.IntN(3), Budget: 0.05 + 2*rng.Float64()}
	if rng.IntN(4) > 0 {
		h.Delay = time.Duration(rng.IntN(3000)) * time.Microsecond
	}
	if rng.IntN(2) == 0 {
		h.NonFatalCodes = []codes.Code{codes.Unavailable}
	}
	return h
}

// hedgesScheduled reports whether lanes have scheduled hedges that the reactor goroutine has
// not taken yet: the first of them woke it through its inbox.
func (w *simWorld) hedgesScheduled() bool {
	s := w.r.dueHedges
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.scheduled) > 0
}

// hedgesQueued reports whether hedges may wait in the lanes' queue: it holds entries, in a
// reactor that hedges.
func (w *simWorld) hedgesQueued() bool {
	return w.r.dueHedges != nil && w.workQueued()
}

// simFlight is what the simulator knows of a flight: the call that started it, and the
// attempts lanes have begun.
type simFlight struct {
	f        *flight
	call     *simCall
	attempts int
}

// beganAttempt counts an attempt of sl's flight, checking MaxAttempts.
func (w *simWorld) beganAttempt(sl *simLane) {
	sf := w.flightCalls[sl.flight]
	sf.attempts++
	if h := sl.flight.hedge; h != nil && sf.attempts > h.p.maxAttempts {
		w.fail("call %d: its transport call made %d attempts, over MaxAttempts %d", sf.call.id, sf.attempts, h.p.maxAttempts)
	}
}

// hedgeStart is a lane that took a hedge from the queue: it begins the attempt, unless the
// call was decided meanwhile.
func (w *simWorld) hedgeStart(sl *simLane, token *callcore.Call) {
	f, ctx := w.r.flights.beginHedge(token)
	sf := w.flightCalls[f]
	if ctx == nil {
		w.note("lane skips a hedge of call %d, decided", sf.call.id)
		return
	}
	sl.l.load.Add(1)
	sl.busy, sl.flight, sl.ctx, sl.call = true, f, ctx, sf.call
	w.checkLimit()
	w.nextAttempt(sl)
	w.note("lane sends hedge %d of call %d (%v)", ctx.attempt, sf.call.id, sl.outcome)
}

// nextAttempt begins the attempt of sl's flight whose context is sl.ctx.
func (w *simWorld) nextAttempt(sl *simLane) {
	sl.began = sl.l.beginAttempt(sl.flight, sl.ctx)
	w.beganAttempt(sl)
	sl.failures = 0
	sl.outcome = w.outcome()
	sl.next = w.clock.now + w.latency()
	w.attempt(sl)
}

// checkHedges verifies, after every step, that no attempt of a decided flight runs on without
// being cancelled, and that the budget holds between none and a full bucket.
func (w *simWorld) checkHedges() {
	if w.r.flights == nil {
		return
	}
	for _, sl := range w.lanes {
		if sl.busy && !sl.stuck && sl.flight != nil && sl.flight.closed && sl.ctx.Err() == nil {
			w.fail("call %d: an attempt of its transport call runs on after the call was decided, not cancelled", sl.call.id)
		}
	}
	if e := w.r.byPath[simRead.Path()]; e != nil && e.hedge != nil {
		if tokens := e.hedge.tokens; tokens < 0 || tokens > hedgeBudgetTokens {
			w.fail("the hedging budget holds %v tokens, outside [0, %d]", tokens, hedgeBudgetTokens)
		}
	}
}
