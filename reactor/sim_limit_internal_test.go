package reactor

import (
	"fmt"
	"math/rand/v2"
)

// The simulation's adaptive in-flight limit (Config.AdaptiveLimit): the configuration a seed
// draws, and the invariants it must keep.

// simAdaptiveLimit returns the adaptive limit of seed's reactor, which has workers invokers
// and lanes lanes: none for half the seeds, otherwise random bounds, start and backoff, zero
// fields (the defaults) among them. It draws from a generator of its own.
func simAdaptiveLimit(seed uint64, workers, lanes int) *AdaptiveLimit {
	rng := rand.New(rand.NewPCG(seed, 0x11b17))
	if rng.IntN(2) == 0 {
		return &AdaptiveLimit{Disabled: true}
	}
	l := &AdaptiveLimit{}
	floor := workers
	if rng.IntN(3) > 0 {
		l.Floor = 1 + rng.IntN(lanes)
		floor = l.Floor
	}
	if rng.IntN(3) > 0 {
		l.Initial = floor + rng.IntN(lanes-floor+1)
	}
	if rng.IntN(3) > 0 {
		l.Backoff = 0.3 + 0.65*rng.Float64()
	}
	return l
}

// checkLimit verifies, just after a lane has started a call, that the transport calls the
// simulated backend is running, this one included, are within the adaptive limit: a lane
// takes a call only while fewer calls than the limit run. Once the ready queue is closed, the
// gate is open (every call left in it is settled: the lanes only skip them).
func (w *simWorld) checkLimit() {
	limit, _ := w.r.work.Limit()
	if limit == 0 || w.turn.phase == turnStopping || w.engineDone {
		return
	}
	if busy := w.busyLanes(); busy > limit {
		w.fail("a lane started a call with %d transport calls running, this one included, over the adaptive limit %d", busy, limit)
	}
}

// checkLimitState verifies, after every step, that the adaptive limit stays within its
// bounds and that the places the gate counts as held are those the lanes hold: a lane that
// forgets to give one back would close the gate for good.
func (w *simWorld) checkLimitState() {
	limit, running := w.r.work.Limit()
	if !w.r.limited {
		return
	}
	var floor int
	if l := w.r.cfg.AdaptiveLimit; l != nil {
		floor = l.Floor
	}
	lanes := w.r.cfg.Workers * w.r.cfg.BatchSize
	if floor == 0 {
		floor = w.r.cfg.Workers
	}
	if limit < floor || limit > lanes {
		w.fail("the adaptive limit is %d, outside [%d, %d]", limit, floor, lanes)
	}
	held := 0
	for _, sl := range w.lanes {
		if sl.l.slot.Held() {
			held++
		}
	}
	if running != held {
		w.fail("the adaptive limit counts %d places held, the lanes hold %d", running, held)
	}
}

// limitString describes the adaptive limit of the world's configuration.
func (w *simWorld) limitString() string {
	l := w.r.cfg.AdaptiveLimit
	switch {
	case l == nil:
		return "AdaptiveLimit's defaults"
	case l.Disabled:
		return "AdaptiveLimit disabled"
	}
	return fmt.Sprintf("AdaptiveLimit{Floor %d, Initial %d, Backoff %.2f}", l.Floor, l.Initial, l.Backoff)
}
