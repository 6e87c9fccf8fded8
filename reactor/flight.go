package reactor

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/lanecodec"
)

// A flight is one transport call that serves one or more calls of a coalesced method
// (MethodPolicy.Coalesce) whose requests and outgoing metadata are the same: its members. The
// lane that claims a call of such a method and finds no flight it may join starts one and runs
// it; a call joins a flight whose deadline is at least its own and which has fewer members
// than the method's CoalesceMax, and its lane goes on to its next call.
//
// The flight runs with a request and a context of its own, made from its first member while
// its lane owned it, so that no member's record is read while the transport call runs: every
// member, the first included, is Joined (callcore.Joined) and may settle alone. The reactor
// goroutine settles a member that times out, is cancelled or is cut off by Close at once
// (callcore.Left): its outcome goes to Tick without waiting for the transport call, since
// nothing reads its record. The transport call is cancelled once every member has left it.
// When it returns, its lane settles each member still joined, each with its own response.
type flight struct {
	t            *flightTable
	key          string // the method, WaitForReady, the metadata and the request's encoding
	ops          *callcore.Ops
	req          lanecodec.Encoded // the request, encoded once, as the lane's codec sends it
	deadline     int64             // the first member's deadline, the transport call's
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

// flightMember is one use of a record that joined a flight.
type flightMember struct {
	c   *callcore.Call
	gen uint32
}

// flightTable holds a reactor's flights that calls may still join, by key, and counts those
// whose lanes have not finished them. Lanes join and finish flights, and the reactor goroutine
// settles their members, under its mutex. Only a reactor whose policies coalesce a method has
// one.
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

// joinable returns the flight in progress for key that a call with deadline may join, if any,
// for a method whose flights serve at most limit calls; t.mu held.
func (t *flightTable) joinable(key []byte, deadline int64, limit int) *flight {
	f := t.byKey[string(key)]
	if f == nil || f.closed || deadline > f.deadline || len(f.members) >= limit {
		return nil
	}
	return f
}

// add makes use gen of c, which the calling lane has claimed (Running), a member of f, and
// reports whether it did: it does not if the reactor cut the call meanwhile. t.mu held.
func (f *flight) add(c *callcore.Call, gen uint32) bool {
	if !c.Move(gen, callcore.Running, callcore.Joined) {
		return false
	}
	f.members = append(f.members, flightMember{c: c, gen: gen})
	f.live++
	f.t.byMember[c] = f
	return true
}

// start counts f, whose first member has just been added, as running, and, for a coalesced
// method (joinable), enters it as the flight calls with its key join, in place of one they may
// no longer join; t.mu held.
func (t *flightTable) start(f *flight, joinable bool) {
	if joinable {
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

// endAttempt ends the attempt of f with context ctx, whose lane returned with err, and
// decides what follows: it returns the members to settle with the attempt's result, if it
// settles the flight (those the reactor has not settled are still Joined); or the context of
// the next attempt, which the lane is to run at once (a hedge after a non-fatal code); or
// neither, if another attempt decided the flight, every member left it, or another attempt may
// still answer. The lane leaves its invoker's load when no attempt is next (leaveLoad),
// unless Close has given up on the lanes.
func (t *flightTable) endAttempt(f *flight, ctx *callCtx, err error) (members []flightMember, next *callCtx, leaveLoad bool) {
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
		return nil, nil, !t.abandoned
	}
	if h := f.hedge; h != nil && err != nil && h.p.nonFatalCode(status.Code(err)) {
		if next := h.nextNow(f); next != nil {
			return nil, next, false
		}
		if len(f.running) > 0 || h.queued > 0 { // another attempt answers for f
			t.running--
			return nil, nil, !t.abandoned
		}
	}
	t.close(f)
	members = f.members
	f.members = nil
	for _, m := range members {
		if t.byMember[m.c] == f { // else the member left, and its record may be in a later use
			delete(t.byMember, m.c)
		}
	}
	if f.hedge != nil {
		others = f.hedge.decided(f, ctx, err)
	}
	t.running--
	return members, nil, !t.abandoned
}

// leave tells c's flight that c, one of its members, has settled without it: the reactor
// goroutine moved it from Joined to Left, because its deadline or its parent context's passed
// (forDeadline), or it was cancelled or cut off by Close. Once every member has left, the
// flight's transport call is cancelled, its context ending with callcore.CutError of
// forDeadline. A flight that has ended already is left as it is.
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
	if cancel {
		t.close(f)
		running = slices.Clone(f.running)
	}
	t.mu.Unlock()
	for _, ctx := range running {
		ctx.End(callcore.CutError(forDeadline))
	}
}

// abandon is Close giving up on the lanes: it returns how many flights are still running,
// whose lanes are held by a hook of the host, since every member has settled and every
// transport call has been cancelled.
func (t *flightTable) abandon() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.abandoned = true
	return t.running
}
