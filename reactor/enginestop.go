package reactor

import (
	"cmp"
	"slices"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/internal/callqueue"
)

// The reactor goroutine's end: once a turn reports that Close was asked for and no call is
// left unsettled, run waits for the lanes to exit (waitLanes), or for Close to give up on them,
// and finish delivers what is left, through stand-ins for the calls of lanes given up on
// (abandonLanes), and closes what the reactor owns.

// waitLanes waits for every lane to exit, and returns 0; or, if Close gives up on them first
// (abandon), returns how many had not exited. Every call is settled by then, so a lane that
// runs one runs a call the reactor cut, whose context is cancelled: it returns at once, unless
// a hook of the host on the lane ignores the context.
func (e *engine) waitLanes() int {
	r := e.r
	left := r.cfg.Workers * r.cfg.BatchSize
	for ; left > 0; left-- {
		select {
		case <-r.laneExit:
		case <-r.abandon:
			return left
		}
	}
	return 0
}

// finish, once the lanes have stopped, closes an owned connection, settles whatever raced with
// Close, and signals that the reactor goroutine is done. left is how many lanes had not
// exited when Close gave up on them (waitLanes): finish delivers the calls that those still
// hold and waits only for the others, which hold none.
func (e *engine) finish(left int) {
	r := e.r
	e.timer.Stop()
	_, done := r.in.Close()
	e.nowNs = r.now() // the settle time of the calls below
	// The lanes' last reports: calls they finished with after the reactor cut them.
	for _, d := range done {
		e.laneDone(d)
	}
	e.release()
	if left > 0 {
		stuck := e.abandonLanes()
		// The other lanes hold no call: they exit at once. A stuck lane whose hook returns
		// meanwhile may exit in the place of one of them, which then exits a moment later.
		for ; left > stuck; left-- {
			<-r.laneExit
		}
		r.stuckLanes = stuck
	}
	// Calls admitted before Close whose submission was published after the last turn; the
	// producers of later ones take them back and fail them themselves.
	r.subs.Close(func(pos uint64, s *callqueue.Submission) {
		c, gen := e.record(pos, s)
		c.Move(gen, callcore.Unclaimed, callcore.Dropped)
		e.settle(c, localError(callerr.Closed, c.Ops.Path, "reactor closed before the call was sent", nil), callcore.ReasonClosed, false)
	})
	e.countAccepted()
	if r.cc != nil {
		if err := r.cc.Close(); err != nil {
			r.cfg.Logger.Warn("prpc: closing the connection", "error", err)
		}
		r.subconns.Release()
	}
	r.wakeHostLast(e.settled)
	r.recordsMade = e.records.Made
	close(r.done)
}

// abandonLanes delivers the calls held by lanes that Close gave up on, once their reports can
// no longer arrive (the inbox is closed): the calls the reactor cut while a lane ran them
// whose lane never reported (held), in the order they were cut. Their outcome was recorded
// when they were cut. Each is delivered through a stand-in record (standIn) and taken off the
// InFlight and load gauges. It returns how many there were, one per stuck lane, plus the
// flights still running (flight.go), whose lanes are stuck too: their members have left them
// and went to Tick then.
func (e *engine) abandonLanes() int {
	r := e.r
	flights := 0 // the flights still running: every member has left, their lanes are stuck
	if r.flights != nil {
		flights = r.flights.abandon()
	}
	n := len(e.held)
	if n+flights == 0 {
		return 0
	}
	// A lane counts its call in InFlight after it has written the record's Claimed, which
	// standIn reads: this load orders the two.
	r.inFlight.Load()
	cut := make([]*callcore.Call, 0, n)
	for c := range e.held {
		cut = append(cut, c)
	}
	slices.SortFunc(cut, func(a, b *callcore.Call) int { return cmp.Compare(e.held[a], e.held[b]) })
	for _, c := range cut {
		e.settled = append(e.settled, e.standIn(c))
	}
	clear(e.held)
	r.inFlight.Add(-int32(n))
	// Every other lane has taken its calls off its invoker's load; the stuck lanes never will
	// (their reports are refused), and which invoker each belongs to is not recorded.
	for i := range r.loads {
		r.loads[i].Store(0)
	}
	return n + flights
}

// standIn returns the record through which a call that a stuck lane still holds is delivered:
// a free one, settled (Cut), with c's request, target and outcome. c itself is never
// delivered, so never freed and reused: the stuck lane, whose hook may still read the
// request, reads c once its transport call returns, and nothing writes c any more.
func (e *engine) standIn(c *callcore.Call) *callcore.Call {
	s := e.records.Get()
	gen := s.Gen()
	s.Ops, s.Target, s.Req, s.Extra = c.Ops, c.Target, c.Req, c.Extra
	s.Submitted, s.Deadline, s.WaitForReady, s.Metadata = c.Submitted, c.Deadline, c.WaitForReady, c.Metadata
	s.Claimed = c.Claimed
	s.Value, s.Err, s.Header, s.Trailer, s.Reason = c.Value, c.Err, c.Header, c.Trailer, c.Reason
	s.Settled = s.Since(e.nowNs)
	s.Move(gen, callcore.Unclaimed, callcore.Running)
	s.Move(gen, callcore.Running, callcore.Cut)
	return s
}
