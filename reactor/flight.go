package reactor

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/lanecodec"
)

// A flight is the transport attempts of one call: one attempt, or, for a hedged method,
// several, of which one decides the flight (hedge.go). It may serve several calls, its members,
// whose requests and outgoing metadata are the same: a call of a coalesced method
// (MethodPolicy.Coalesce) joins the flight with its key, whatever its deadline, while that
// flight is younger than the method's CoalesceMaxAge, has not passed its deadline and has fewer
// members than CoalesceMax, and its lane goes on to its next call. A flight of a method that is
// hedged but not coalesced has one member. The lane that claims a call of such a method and
// finds no flight it may join starts one (coalesce.go) and runs it (flightrun.go).
//
// The flight runs with a request and a context of its own, made from its first member while its
// lane owned it, so that no member's record is read while an attempt runs: every member, the
// first included, is Joined (callcore.Joined) and may settle alone. The reactor goroutine
// settles a member that times out, is cancelled or is cut off by Close at once (callcore.Left):
// its outcome goes to Tick without waiting for the attempts, since nothing reads its record.
// The running attempts are cancelled once every member has left. The lane of the attempt that
// decides the flight settles each member still joined, each with its own response.
//
// The attempts carry the flight's deadline, its first member's rounded up; a member that joined
// later may have a later one, which the flight must not cut short: when an attempt ends at the
// flight's deadline (DeadlineExceeded once that deadline has passed), the members whose own
// deadlines are later go on in a new flight of their own (resend), whose first attempt the same
// lane runs at once, with the latest of their deadlines; the others fail with the attempt's
// error, their deadlines having passed too. A flight is resent at most once, after its
// deadline; a resend, which later calls may join, likewise. The reactor, which has no timer for
// a flight's deadline, cuts the attempts at it when a member leaves for its own deadline once
// the flight's has passed (leave), so that a server that never answers cannot hold the later
// members beyond their next deadline.
type flight struct {
	t            *flightTable
	key          string // the method, WaitForReady, the metadata and the request's encoding
	ops          *callcore.Ops
	req          lanecodec.Encoded // the request, encoded once, as the lane's codec sends it
	deadline     int64             // the attempts' deadline: its first member's, rounded up
	born         int64             // when the flight was made, on the reactor's clock
	maxAge       int64             // how long after born calls may join (CoalesceMaxAge)
	coalesced    bool              // calls with its key may join it: its method coalesces
	waitForReady bool
	critical     bool            // the first member's class: its hedges wait as critical calls
	parent       context.Context // the transport contexts' parent: the first member's values
	ctx          *callCtx        // the first attempt's context: parent's values; the deadline
	hedge        *hedging        // the method's hedging (hedge.go); nil if it is not hedged

	// Guarded by t.mu.
	members []flightMember // every call that joined, in order; the first started the flight
	live    int            // members the reactor has not settled
	closed  bool           // no call joins any more: an attempt decided, or every member left
	running []*callCtx     // the contexts of the attempts that lanes are running
}

// flightMember is one use of a record that joined a flight, and that use's deadline, read
// when its lane joined it.
type flightMember struct {
	c        *callcore.Call
	gen      uint32
	deadline int64
}

// flightTable holds a reactor's flights that calls may still join, by key, and counts those
// whose lanes have not finished them. Lanes join and finish flights, and the reactor goroutine
// settles their members and queues their hedges, under its mutex. Only a reactor whose
// policies coalesce or hedge a method has one.
type flightTable struct {
	r     *Reactor
	mu    sync.Mutex
	byKey map[string]*flight
	// byMember names the flight of each call joined to one, for the reactor goroutine, which
	// settles a member knowing only its record: until the reactor settles the call or the
	// flight ends.
	byMember map[*callcore.Call]*flight
	// hedges names the flight each hedging token stands for while hedges of it are queued
	// (hedging.token).
	hedges  map[*callcore.Call]*flight
	running int // attempts started whose lane has not finished them
	// abandoned is set once Close has given up on lanes that a hook of the host holds: a
	// flight's lane that returns after it leaves the invokers' loads, reset then, alone.
	abandoned bool
}

func newFlightTable(r *Reactor) *flightTable {
	return &flightTable{r: r, byKey: make(map[string]*flight), byMember: make(map[*callcore.Call]*flight), hedges: make(map[*callcore.Call]*flight)}
}

// joinable returns the flight in progress for key that a call may join at now, if any: one
// that has not passed its deadline, is at most maxAge old and has fewer than limit members;
// t.mu held.
func (t *flightTable) joinable(key []byte, now int64, limit int) *flight {
	f := t.byKey[string(key)]
	if f == nil || f.closed || now >= f.deadline || len(f.members) >= limit ||
		now-f.born > f.maxAge && mutation != "coalesce-any-age" {
		return nil
	}
	return f
}

// add makes use gen of c, which the calling lane has claimed (Running), a member of f, and
// reports whether it did: it does not if the reactor cut the call meanwhile. t.mu held.
func (f *flight) add(c *callcore.Call, gen uint32) bool {
	deadline := c.Deadline // read while the lane owns the record: once Joined, it may settle
	if !c.Move(gen, callcore.Running, callcore.Joined) {
		return false
	}
	f.members = append(f.members, flightMember{c: c, gen: gen, deadline: deadline})
	f.live++
	f.t.byMember[c] = f
	return true
}

// start counts f, whose first member has just been added, as running, and, for a coalesced
// method (joinable), enters it as the flight calls with its key join, in place of one they may
// no longer join; t.mu held.
func (t *flightTable) start(f *flight) {
	if f.coalesced {
		t.byKey[f.key] = f
	}
	t.running++
}

// close stops f from taking new members, t.mu held.
func (t *flightTable) close(f *flight) {
	f.closed = true
	if t.byKey[f.key] == f {
		delete(t.byKey, f.key)
	}
}

// attemptEnd is what follows the end of a flight's attempt (endAttempt).
type attemptEnd struct {
	// settle are the members to settle with the attempt's result, if it decided the flight:
	// those the reactor has not settled are still Joined.
	settle []flightMember
	// next is the flight whose attempt with context ctx the lane runs at once: the same
	// flight's next attempt after a non-fatal code (a hedge), or a resend's first attempt
	// for the members whose deadlines are later than the one that passed.
	next *flight
	ctx  *callCtx
	// leaveLoad is set when the lane runs no attempt next and leaves its invoker's load,
	// unless Close has given up on the lanes.
	leaveLoad bool
	// lost is set when another attempt decided the flight and cancelled this one: a hedge
	// that lost, not a failure of the backend it went to.
	lost bool
}

// endAttempt ends the attempt of f with context ctx, whose lane returned with err at now, and
// decides what follows (attemptEnd): nothing, if another attempt decided the flight, every
// member left it, or another attempt may still answer; the next attempt, after a non-fatal
// code; otherwise the attempt decides the flight and its members are settled with its result,
// but for those whose deadlines are later than the flight's when the attempt ended because
// the flight's deadline passed: they go on in a resend.
func (t *flightTable) endAttempt(f *flight, ctx *callCtx, err error, now int64) (end attemptEnd) {
	var others []*callCtx
	defer func() {
		for _, o := range others { // the attempts that lost, once t.mu is released
			o.End(context.Canceled)
		}
	}()
	t.mu.Lock()
	defer t.mu.Unlock()
	f.running = slices.DeleteFunc(f.running, func(c *callCtx) bool { return c == ctx })
	if f.closed { // another attempt decided f, or every member left it
		t.running--
		return attemptEnd{leaveLoad: !t.abandoned, lost: ctx.lost}
	}
	// The attempt ended at the flight's deadline: later members must not fail with it.
	expired := status.Code(err) == codes.DeadlineExceeded && now >= f.deadline
	if h := f.hedge; h != nil && !expired && err != nil {
		switch next, wait := h.afterFailure(f, err); {
		case next != nil:
			return attemptEnd{next: f, ctx: next}
		case wait: // another attempt answers for f
			t.running--
			return attemptEnd{leaveLoad: !t.abandoned}
		}
	}
	t.close(f)
	members := f.members
	f.members = nil
	var again []flightMember // the members a resend serves
	settle := members[:0:0]
	for _, m := range members {
		// A member that left may have its record in a later use already, which may even
		// have joined f again: only a use still Joined, which the table names, is f's.
		if claim, ok := m.c.Claim(m.gen); !ok || claim != callcore.Joined || t.byMember[m.c] != f {
			settle = append(settle, m) // the lane's claim on it fails: skipped
			continue
		}
		delete(t.byMember, m.c)
		if expired && m.deadline > now && mutation != "coalesce-fail-later" {
			again = append(again, m)
		} else {
			settle = append(settle, m)
		}
	}
	if f.hedge != nil {
		others = f.hedge.decided(f, ctx, err)
	}
	if len(again) > 0 {
		nf := t.resend(f, again, now)
		return attemptEnd{settle: settle, next: nf, ctx: nf.ctx}
	}
	t.running--
	return attemptEnd{settle: settle, leaveLoad: !t.abandoned}
}

// resend returns a new flight for members, members of f whose deadlines are later than f's,
// which has just passed: f's request and parent, the latest of their deadlines, rounded up,
// and, if f is hedged, hedging of its own; the calling lane runs its first attempt at once,
// in f's place among the running flights. Calls with its key may join it if f's could and no
// other flight has taken f's place. t.mu held.
func (t *flightTable) resend(f *flight, members []flightMember, now int64) *flight {
	nf := &flight{t: t, key: f.key, ops: f.ops, req: f.req, born: now, maxAge: f.maxAge, coalesced: f.coalesced,
		waitForReady: f.waitForReady, critical: f.critical, parent: f.parent, members: members, live: len(members)}
	for _, m := range members {
		nf.deadline = max(nf.deadline, m.deadline)
		t.byMember[m.c] = nf
	}
	nf.deadline = roundDeadline(nf.deadline)
	if f.hedge != nil {
		nf.hedge = &hedging{p: f.hedge.p, sent: 1, started: 1} // the calls paid their share
	}
	nf.ctx = nf.attemptCtx(1)
	nf.running = []*callCtx{nf.ctx}
	if nf.coalesced && t.byKey[nf.key] == nil {
		t.byKey[nf.key] = nf
	}
	return nf
}

// leave tells c's flight that c, one of its members, has settled without it: the reactor
// goroutine moved it from Joined to Left, because its deadline or its parent context's passed
// (forDeadline), or it was cancelled or cut off by Close. Once every member has left, the
// flight's running attempts are cancelled, their contexts ending with callcore.CutError of
// forDeadline. A member that leaves for a deadline once the flight's own has passed, while
// others remain, cuts the running attempts as that deadline would have (DeadlineExceeded):
// the lane of the first to end then sends again for the members whose deadlines are later
// (endAttempt). A flight that has ended already is left as it is.
func (t *flightTable) leave(c *callcore.Call, forDeadline bool) {
	t.mu.Lock()
	f := t.byMember[c]
	if f == nil { // the flight ended: its lane skips c, which is no longer Joined
		t.mu.Unlock()
		return
	}
	delete(t.byMember, c)
	f.live--
	cancel := !f.closed && (f.live == 0 ||
		mutation == "coalesce-cancel-first" && len(f.members) > 0 && f.members[0].c == c)
	var running []*callCtx
	switch {
	case cancel:
		t.close(f)
		running = slices.Clone(f.running)
	case !f.closed && forDeadline && t.r.now() >= f.deadline:
		running = slices.Clone(f.running) // ended at the flight's deadline: not closed
	}
	t.mu.Unlock()
	for _, ctx := range running {
		ctx.End(callcore.CutError(forDeadline))
	}
}

// abandon is Close giving up on the lanes: it returns how many flights are still running,
// whose lanes are held by a hook of the host, since every member has settled and every
// attempt has been cancelled.
func (t *flightTable) abandon() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abandoned = true
	return t.running
}
