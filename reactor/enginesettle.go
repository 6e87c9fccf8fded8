package reactor

import (
	"fmt"
	"time"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
)

// The reactor goroutine's settlements: take makes it the settler of a call, by the claim's
// compare-and-swap (callcore), dropping a call no lane has claimed (drop) or cutting one a lane
// runs; settle records the outcome and queues it for Tick, or holds it until the lane reports
// (laneDone). timeout and abort are the outcomes it settles calls with on its own, for turn's
// steps 2 and 5 and for Close; a cancel's are in handle.

// timeout settles c, taken from the lanes, with ErrTimeout; sent says whether a lane had sent it.
func (e *engine) timeout(c *callcore.Call, sent bool) {
	elapsed, timeout := time.Duration(e.nowNs-c.Submitted), time.Duration(c.Deadline-c.Submitted)
	msg := fmt.Sprintf("deadline exceeded after %v (timeout %v)", elapsed.Round(time.Millisecond), timeout)
	if !sent {
		msg += "; never sent"
	}
	e.settle(c, localError(callerr.Timeout, c.Ops.Path, msg, nil), callcore.ReasonTimeout, sent)
}

// abort settles every unsettled call with ErrClosed wrapping cause, for Close.
func (e *engine) abort(cause error) {
	// Drop every call no lane has claimed before cutting any: a cut call frees its lane,
	// which would otherwise send the next queued call before this loop reached it.
	type cut struct {
		c    *callcore.Call
		sent bool
	}
	var taken []cut
	for ent := range e.heap.All() {
		if e.drop(ent.C, ent.Gen) {
			taken = append(taken, cut{ent.C, false})
		}
	}
	for ent := range e.heap.All() {
		if ok, _ := e.take(ent.C, ent.Gen, false); ok {
			taken = append(taken, cut{ent.C, true})
		}
	}
	e.r.cutOff.Add(uint64(len(taken)))
	for _, t := range taken {
		e.settle(t.c, localError(callerr.Closed, t.c.Ops.Path, "reactor closed before the call completed: "+cause.Error(), cause), callcore.ReasonClosed, t.sent)
	}
}

// take makes the reactor goroutine c's settler, unless c is settled already, and reports
// whether it did and whether a lane had sent c. It drops c if no lane has claimed it;
// otherwise it cuts the running transport call, whose context then reports
// context.DeadlineExceeded if forDeadline is set (the call's deadline or its parent's
// passed) and context.Canceled if not, and whose lane then reports that it has finished
// with c.
func (e *engine) take(c *callcore.Call, gen uint32, forDeadline bool) (taken, sent bool) {
	if e.drop(c, gen) {
		return true, false
	}
	if mutation == "skip-claim-cas" && c.Unsettled(gen) {
		// The bug: the reactor takes a running call without its compare-and-swap, so the
		// lane may settle it too.
		c.CancelTransport(forDeadline)
		return true, true
	}
	if !c.Move(gen, callcore.Running, callcore.Cut) {
		if c.Move(gen, callcore.Joined, callcore.Left) { // a member of a flight: it leaves alone
			e.r.flights.leave(c, forDeadline)
			return true, true
		}
		return false, false // settled already, by a lane or by the reactor, or a later use
	}
	if mutation != "no-cancel-transport" {
		c.CancelTransport(forDeadline)
	}
	return true, true
}

// settle records the outcome of c, which take gave to the reactor goroutine, and queues it for
// delivery, its error marked NotSent unless a lane had claimed it (sent); if a lane was running
// c (sent, Cut), it is queued once the lane reports that it has finished with it (laneDone), so
// that nothing reads the request once the caller has the outcome. The lane's transport call,
// cancelled, returns promptly. A call that left a flight (Left) is queued at once: the
// flight's lane reads none of its members' records.
func (e *engine) settle(c *callcore.Call, err *calls.Error, reason callcore.Reason, sent bool) {
	if !sent {
		markNotSent(err)
	}
	e.heap.Remove(c)
	c.StopParentWatch()
	c.Err = err
	c.Reason = reason
	// A cut call waits for its lane; a call that left a flight waits for nothing: no lane
	// reads its record.
	hold := sent
	if sent && c.Settler() == callcore.Left {
		hold = false
		e.left++
	}
	if hold {
		e.cuts++
		e.held[c] = e.cuts
	}
	if !hold || mutation == "deliver-cut" {
		// A call accepted in this turn may have been submitted after the turn read the clock:
		// Since counts that as no time. A call that left a flight may have been claimed
		// after it, by a lane: no time either.
		c.Settled = max(c.Since(e.nowNs), c.Claimed)
		e.settled = append(e.settled, c)
	}
}

// drop makes sure no lane will send c, unless one has claimed it already, and reports whether
// it did. A dropped call's request is released; a lane that takes it from the ready queue
// finds it Dropped and skips it.
func (e *engine) drop(c *callcore.Call, gen uint32) bool {
	if !c.Move(gen, callcore.Unclaimed, callcore.Dropped) {
		return false
	}
	if c.Queued {
		e.r.queued.Add(-1)
	}
	return true
}
