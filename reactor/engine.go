package reactor

import (
	"context"
	"errors"
	"time"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/internal/callqueue"
)

// engine is the state owned by the reactor goroutine: the deadline heap (and, in a reactor that
// hedges, the hedges' due times: hedgeSchedule), with one timer for the earliest of them, this
// turn's admitted calls for the ready queue, and the batch of calls it settled in this turn.
// Invoker lanes settle the calls they complete themselves; the reactor settles those that time
// out, are cancelled or are cut off by Close, and hears from a lane only about such a call that
// was running.
type engine struct {
	r       *Reactor
	heap    *callqueue.DeadlineHeap
	records callqueue.RecordPool
	sub     callqueue.Submission // the submission being accepted
	// byPos names the record of each call accepted by its submission position, for the
	// cancels of promises, which know only the position.
	byPos    callqueue.CallsByPosition
	accepted []accepted // calls accepted this turn, by method, not counted in Stats yet
	admitted []callqueue.Work
	// finished counts, per invoker, the calls this turn learnt a lane has finished with after
	// the reactor settled them: they leave the InFlight and load gauges once this turn's
	// settled calls are queued for Tick, so that a Stats reader who sees a call gone from
	// InFlight can Tick and get it.
	finished []int32
	// held holds the calls the reactor cut while a lane ran them and whose lane has not
	// reported yet (laneDone), each with the order it was cut in: their delivery waits for
	// that report, unless Close gives up on the lanes (abandonLanes). A lane runs one call at
	// a time, so it holds at most one call per lane.
	held map[*callcore.Call]uint64
	cuts uint64 // calls cut while a lane ran them, for held's order
	// left counts the calls this turn settled while they were joined to a flight
	// (callcore.Left): they leave the InFlight gauge with the finished ones.
	left    int32
	settled []*callcore.Call
	events  []callqueue.Event
	done    []callqueue.Completion
	timer   Timer
	armed   bool  // the timer is set and has not been seen to fire
	armedAt int64 // the deadline or due hedge the timer is set for, while armed
	closing bool
	nowNs   int64 // r.now(), read once per turn
}

// start launches the reactor goroutine and the invoker lanes.
func (r *Reactor) start() {
	e := newEngine(r)
	for inv := range r.cfg.Workers {
		for range r.cfg.BatchSize {
			go r.lane(inv)
		}
	}
	if r.notify != nil {
		go r.notify.run()
	}
	go e.run()
}

// newEngine returns the reactor goroutine's state, its timer stopped.
func newEngine(r *Reactor) *engine {
	e := &engine{r: r, heap: &r.deadlines, timer: r.clock.NewTimer(time.Hour), finished: make([]int32, r.cfg.Workers),
		held: make(map[*callcore.Call]uint64)}
	e.records.Freed = &r.freed
	e.byPos = callqueue.NewCallsByPosition(r.subs)
	e.timer.Stop()
	return e
}

// run is the reactor goroutine: it turns until a turn reports that the reactor is done, then
// waits for the lanes and finishes (enginestop.go).
func (e *engine) run() {
	for {
		e.wait()
		if e.turn() {
			e.r.work.Close() // every call left in it was dropped, its request released
			e.finish(e.waitLanes())
			return
		}
	}
}

// wait blocks until a submission is published, an inbox event, a lane's report or a hedge a
// lane scheduled arrives, or the timer fires. It says that it sleeps before it looks at the
// ring a last time, so that a producer that publishes after the look wakes it.
func (e *engine) wait() {
	r := e.r
	if r.subs.BeginSleep() {
		select {
		case <-r.in.Wake():
		case <-e.timer.C():
			e.armed = false
		}
	}
	r.subs.EndSleep()
}

// turn is one turn of the reactor goroutine: it takes the submitted calls, the inbox's events
// and the lanes' reports, settles what is due, hands the new calls to the lanes, queues the
// settled ones for Tick and sets the timer. It reports true once Close has been asked for and
// no call is left unsettled: the caller then stops the lanes and calls finish.
//
// The order of its steps is what keeps each call's promises; each step says what must come
// before it and why. The simulator runs the same steps in the same order, one part at a time
// (sim_world_internal_test.go, turnStep).
func (e *engine) turn() (done bool) {
	// 1. The inbox first, then the clock. A cancel is pushed after its call was published, so
	//    every call this turn's events name is in the ring by now: step 2 gives it a record
	//    before step 4 looks it up by position. Read the other way round, a cancel pushed
	//    between the two would name a call no record holds yet, and be lost.
	e.begin()
	// 2. Every published submission gets a record, a place in the deadline heap and, unless
	//    its deadline has passed already, a place among this turn's calls for the lanes. They
	//    are counted in Stats before step 7 can hand any of them to a lane, and so before any
	//    can be delivered.
	for e.acceptNext() {
	}
	e.countAccepted()
	// 3. The lanes' reports on calls the reactor cut in earlier turns: their outcomes, held
	//    until no lane reads their requests, now go to Tick, ahead of what this turn settles.
	for i := range e.done {
		e.laneDone(e.done[i])
	}
	// 4. Cancels, Close and aborts, after step 2, so that the calls they name have records.
	for i := range e.events {
		e.handle(&e.events[i])
	}
	// 5. Deadlines, after steps 2 and 4: the heap holds this turn's calls, and the calls
	//    cancelled in step 4 are not timed out as well.
	e.expire()
	// 6. Queue the hedges due, after steps 4 and 5: a flight whose members this turn has all
	//    cancelled or timed out is cancelled by then, and sends no more attempts.
	e.hedge()
	//    Then the streams' due times (streamsDue): timeouts end their streams, backoffs
	//    that are over let their receivers reopen. No call depends on them.
	e.streamsDue()
	// 7 to 10: hand out, queue for Tick, release the gauges, prune; see end.
	if e.end() {
		return true
	}
	// 11. The timer, last: for the earliest deadline or due hedge left once this turn has
	//     settled, queued and pruned what it could.
	e.arm()
	return false
}

// begin starts a turn: it takes the inbox's events and the lanes' reports, then reads the
// clock for the turn (turn's step 1).
func (e *engine) begin() {
	e.events, e.done = e.r.in.Take(e.events, e.done)
	e.nowNs = e.r.now()
}

// acceptNext accepts the next published submission, if any, and reports whether there was
// one (turn's step 2).
func (e *engine) acceptNext() bool {
	pos, ok := e.r.subs.Take(&e.sub)
	if ok {
		e.accept(pos, &e.sub)
	}
	return ok
}

// end ends a turn's work (turn's steps 7 to 10) and reports whether the reactor is done: Close
// was asked for and no call is left unsettled.
func (e *engine) end() (done bool) {
	// 7. Hand this turn's calls to the lanes, after steps 4 and 5, so that no call cancelled
	//    or timed out in this turn reaches a lane.
	e.dispatch()
	// 8. Queue this turn's settled calls for Tick and wake the host, once.
	e.flush()
	// 9. Take the calls the lanes finished with off the InFlight and load gauges, after step
	//    8: a Stats reader who sees a call gone from InFlight can Tick and get it.
	e.release()
	// 10. Drop the heap's dead entries, now that this turn settled what it could.
	e.heap.Prune()
	return e.closing && e.heap.Live() == 0
}

// accept gives a submitted call a record and schedules it: it times out at once if its
// deadline has passed, is cancelled at once if its promise was, and otherwise joins this
// turn's calls for the lanes.
func (e *engine) accept(pos uint64, s *callqueue.Submission) {
	critical := s.Flags&callqueue.SubmitCritical != 0 // record clears s
	c, gen := e.record(pos, s)
	e.admit(c, gen, critical)
}

// record gives the call of s, submitted at pos, a record and counts it for Stats
// (countAccepted).
func (e *engine) record(pos uint64, s *callqueue.Submission) (c *callcore.Call, gen uint32) {
	c = e.records.Get()
	c.Ops, c.Target, c.Req, c.Extra = s.Ops, s.Target, s.Req, s.Extra
	c.Submitted, c.Deadline = s.Submitted, s.Deadline
	c.WaitForReady, c.Metadata = s.Flags&callqueue.SubmitWaitForReady != 0, s.Flags&callqueue.SubmitMetadata != 0
	callqueue.ClearSubmission(s)
	e.countOne(e.r.method(c.Ops))
	gen = c.Gen()
	e.byPos.Put(pos, c, gen)
	return c, gen
}

// countAccepted counts this turn's accepted calls in Stats, as submitted and pending, before
// any of them can reach a lane and be delivered.
func (e *engine) countAccepted() {
	if len(e.accepted) == 0 {
		return
	}
	r := e.r
	r.mu.Lock()
	for _, a := range e.accepted {
		r.counts.submit(a.m.counters, a.n)
		r.counts.pending += int(a.n)
	}
	r.mu.Unlock()
	clear(e.accepted)
	e.accepted = e.accepted[:0]
}

// accepted counts the calls of one method the reactor goroutine accepted in a turn.
type accepted struct {
	m *methodEntry
	n uint64
}

// countOne counts an accepted call of method m. A turn usually accepts the calls of a few
// methods, so a scan from the last one counted finds m at once.
func (e *engine) countOne(m *methodEntry) {
	for i := len(e.accepted) - 1; i >= 0; i-- {
		if e.accepted[i].m == m {
			e.accepted[i].n++
			return
		}
	}
	e.accepted = append(e.accepted, accepted{m: m, n: 1})
}

// laneDone handles a lane's report that it has finished with d.c, which the reactor cut while
// the lane ran it: the call's outcome, recorded when it was cut, now goes to Tick, since no
// lane reads its request any more.
func (e *engine) laneDone(d callqueue.Completion) {
	e.finished[d.Inv]++
	delete(e.held, d.C)
	d.C.Settled = d.C.Since(e.nowNs) // its outcome goes to Tick now: the lane's transport call is over
	e.settled = append(e.settled, d.C)
}

func (e *engine) handle(ev *callqueue.Event) {
	c, gen := ev.C, ev.Gen
	switch ev.Kind {
	case callqueue.EvCancelPos: // Promise.Cancel
		var ok bool
		if c, gen, ok = e.byPos.Find(ev.Pos); !ok {
			return // delivered long ago
		}
		if taken, sent := e.take(c, gen, false); taken {
			e.settle(c, localError(callerr.Cancelled, c.Ops.Path, "call cancelled", nil), callcore.ReasonCancelled, sent)
		}
	case callqueue.EvCancel: // the parent context is done
		taken, sent := e.take(c, gen, ev.Deadline)
		if !taken {
			return // settled already, or the record has moved on to another call
		}
		cause := c.Parent().Err()
		if ev.Deadline { // the parent's earlier deadline applies
			e.settle(c, localError(callerr.Timeout, c.Ops.Path, "deadline of the parent context exceeded", cause), callcore.ReasonTimeout, sent)
			return
		}
		e.settle(c, localError(callerr.Cancelled, c.Ops.Path, "parent context done: "+cause.Error(), cause), callcore.ReasonCancelled, sent)
	case callqueue.EvClose:
		e.closing = true
	case callqueue.EvAbort:
		e.abort(e.r.in.AbortErr())
	}
}

// admit schedules use gen of a newly submitted record; a lane takes a critical one before
// every call that is not.
func (e *engine) admit(c *callcore.Call, gen uint32, critical bool) {
	if c.Deadline <= e.nowNs {
		e.drop(c, gen) // not dispatched yet: no lane can have it
		e.timeout(c, false)
		return
	}
	e.heap.Push(c, gen)
	if parent := c.Parent(); parent != nil && parent.Done() != nil {
		in := e.r.in
		c.Extra.StopParent = context.AfterFunc(parent, func() {
			in.Push(callqueue.Event{Kind: callqueue.EvCancel, Gen: gen, C: c, Deadline: errors.Is(parent.Err(), context.DeadlineExceeded)})
		})
	}
	e.admitted = append(e.admitted, callqueue.Work{C: c, Gen: gen, Critical: critical})
}

// dispatch hands this turn's admitted calls, but those already settled, to the lanes' ready
// queue in one batch.
func (e *engine) dispatch() {
	if len(e.admitted) == 0 {
		return
	}
	ready := e.admitted[:0]
	for _, w := range e.admitted {
		if w.C.Unsettled(w.Gen) { // no lane has seen it yet: only the reactor can have settled it
			w.C.Queued = true
			ready = append(ready, w)
		}
	}
	e.r.queued.Add(int32(len(ready)))
	e.r.work.Push(ready, e.nowNs)
	clear(e.admitted)
	e.admitted = e.admitted[:0]
}

// expire settles every call whose deadline has passed.
func (e *engine) expire() {
	for e.expireOne() {
	}
}

// expireOne settles the call with the earliest deadline if that has passed, and reports
// whether one had.
func (e *engine) expireOne() bool {
	ent, ok := e.heap.Earliest()
	if !ok || ent.At > e.nowNs {
		return false
	}
	if taken, sent := e.take(ent.C, ent.Gen, true); taken { // else a lane settled it just now; earliest skips it
		e.timeout(ent.C, sent)
	}
	return true
}

// release takes this turn's finished calls off the InFlight and load gauges.
func (e *engine) release() {
	total := e.left
	e.left = 0
	for inv, n := range e.finished {
		if n > 0 {
			e.r.loads[inv].Add(-n)
			total += n
			e.finished[inv] = 0
		}
	}
	if total > 0 {
		e.r.inFlight.Add(-total)
	}
}

// flush queues this turn's settled calls for Tick and wakes the host once.
func (e *engine) flush() {
	if len(e.settled) == 0 {
		return
	}
	e.r.out.Push(e.settled...)
	clear(e.settled)
	e.settled = e.settled[:0]
	e.r.wakeHost()
}

// arm sets the timer for the earliest deadline or due hedge (wakeAt). A timer already set for
// that time or an earlier one stays as it is: when it fires, the turn finds nothing due and
// moves it on. In a burst the earliest deadline moves on almost every turn, as the oldest calls
// complete, and moving the timer each time would cost a runtime timer update per turn for
// nothing.
func (e *engine) arm() {
	at, ok := e.wakeAt()
	switch {
	case !ok:
		if e.armed {
			e.timer.Stop()
			e.armed = false
		}
	case e.armed && e.armedAt <= at:
	default:
		e.timer.Reset(max(e.r.timeAt(at).Sub(e.r.clock.Now()), 0)) // now, after this turn's work
		e.armed, e.armedAt = true, at
	}
}

// wakeAt returns when the reactor goroutine must next run a turn by itself: at the earliest
// deadline of its calls, or when the first hedge or stream's due time (streamSchedule) falls if
// that is earlier; false if there is none of them.
func (e *engine) wakeAt() (int64, bool) {
	at, ok := e.callsWakeAt()
	if due, streamed := e.r.dueStreams.next(); streamed && (!ok || due < at) {
		return due, true
	}
	return at, ok
}

// callsWakeAt is wakeAt for the calls alone: their earliest deadline, or the first hedge
// due if that is earlier; false if no call is unsettled. No hedge can be sent then, since
// every flight has been decided or left by its members: the hedges taken are dropped, so
// that no timer stays set for them.
func (e *engine) callsWakeAt() (int64, bool) {
	ent, ok := e.heap.Earliest()
	s := e.r.dueHedges
	switch {
	case s == nil:
	case !ok:
		s.drop()
	default:
		if due, hedged := s.next(); hedged && due < ent.At {
			return due, true
		}
	}
	return ent.At, ok
}

// hedge queues, for the lanes, the attempts of hedged calls that lanes have scheduled and
// that are due by this turn's clock (turn's step 6). queueHedge sends an attempt only if its
// flight is undecided, has members left and the budget a token.
func (e *engine) hedge() {
	s := e.r.dueHedges
	if s == nil {
		return
	}
	s.take()
	for {
		d, ok := s.popDue(e.nowNs)
		if !ok {
			return
		}
		e.r.flights.queueHedge(d.f, d.n)
	}
}
