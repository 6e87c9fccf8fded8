package reactor

import (
	"errors"
	"math/rand/v2"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
)

// The simulation's coalesced reads under spread arrivals (MethodPolicy.Coalesce): the
// CoalesceMaxAge a seed draws for simRead, the resends of a flight whose deadline passed while
// members with later deadlines still waited, and the invariants they must keep: a call joins
// only a flight young enough, and no call's own deadline is cut short by another's.

// simCoalesceMaxAge returns simRead's CoalesceMaxAge in seed's reactor: the default for a
// quarter of the seeds, a few milliseconds otherwise, shorter than many transport calls. It
// draws from a generator of its own, so that the other draws stay as they were.
func simCoalesceMaxAge(seed uint64) time.Duration {
	rng := rand.New(rand.NewPCG(seed, 0xa9e))
	if rng.IntN(4) == 0 {
		return 0
	}
	return time.Duration(1+rng.IntN(20)) * time.Millisecond
}

// resent is a lane that goes on with nf, a resend of its flight for the members whose
// deadlines are later than the one that passed: it begins nf's first attempt at once.
func (w *simWorld) resent(sl *simLane, nf *flight) {
	if len(nf.members) == 0 {
		w.fail("call %d: a resend serves no call", sl.call.id)
		return
	}
	now := w.r.now()
	for _, m := range nf.members {
		if m.deadline <= now {
			w.fail("call %d: resent although its deadline has passed", w.callOf(m.c).id)
		}
	}
	w.resends++
	c := w.callOf(nf.members[0].c)
	w.flightCalls[nf] = &simFlight{f: nf, call: c}
	sl.flight, sl.ctx, sl.call = nf, nf.ctx, c
	w.nextAttempt(sl)
	w.note("lane resends for %d calls, the first call %d (%v)", len(nf.members), c.id, sl.outcome)
}

// checkJoined verifies that wk's call c, which its lane has just joined to a flight it did
// not start, joined one that was no older than its method's CoalesceMaxAge.
func (w *simWorld) checkJoined(wk callqueue.Work, c *simCall) {
	claim, _ := wk.C.Claim(wk.Gen)
	if claim != callcore.Joined {
		return // failed or cut, not joined
	}
	f := w.r.flights.byMember[wk.C]
	if f == nil {
		w.fail("call %d: joined a flight the flight table does not name", c.id)
		return
	}
	if age := w.r.now() - f.born; age > f.maxAge {
		w.fail("call %d: joined a transport call %v old, over CoalesceMaxAge %v", c.id, time.Duration(age), time.Duration(f.maxAge))
	}
}

// checkQueued verifies a call, queued for Tick, before its callback runs: a response is a
// message of its own, unchanged, that no other queued call holds (shared records that one
// callback may change under another); a deadline error the reactor or a transport call's
// deadline gave it (not the simulated server's) comes no earlier than the call's own deadline.
func (w *simWorld) checkQueued(rec *callcore.Call, c *simCall) {
	if v, ok := rec.Value.(interface{ GetMessage() string }); ok && rec.Value != nil {
		if other, seen := w.queuedValues[rec.Value]; seen && other != c.id {
			w.fail("call %d: queued for Tick with the response message call %d holds", c.id, other)
		}
		w.queuedValues[rec.Value] = c.id
		if v.GetMessage() != c.req.GetMessage() {
			w.fail("call %d: queued for Tick with the response %q, not its own", c.id, v.GetMessage())
		}
	}
	if rec.Err == nil {
		return
	}
	if errors.Is(rec.Err, calls.ErrShed) {
		var ce *calls.Error
		switch {
		case c.sent:
			w.fail("call %d: shed after a transport call carried it", c.id)
		case !errors.As(rec.Err, &ce) || !ce.NotSent():
			w.fail("call %d: shed, and its error does not say it was never sent", c.id)
		case w.r.now() >= rec.Deadline:
			w.fail("call %d: shed at or after its deadline", c.id)
		}
	}
	st, _ := status.FromError(rec.Err)
	if st.Code() == codes.DeadlineExceeded && !strings.Contains(st.Message(), simServerFailure) && w.r.now() < rec.Deadline {
		w.fail("call %d: failed with %v %v before its deadline", c.id, rec.Err, time.Duration(rec.Deadline-w.r.now()))
	}
}
