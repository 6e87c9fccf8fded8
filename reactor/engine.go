package reactor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/trixnew/prpc/calls"
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
	// byPos names the record of each call accepted, by its submission position modulo the
	// ring's size, for the cancels of promises, which know only the position. An entry is
	// overwritten a lap of the ring later. Admission bounds the calls outstanding by the
	// ring's size, not their age: a call still unsettled when its entry is overwritten (a
	// long call among quick ones) keeps it in lapped, by position, until it is cancelled or
	// a sweep finds it settled.
	byPos    []posEntry
	lapped   map[uint32]posEntry
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
	e.byPos = make([]posEntry, r.subs.Size())
	e.timer.Stop()
	return e
}

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
	//    are counted in Stats before step 6 can hand any of them to a lane, and so before any
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
	slot := &e.byPos[e.r.subs.Index(pos)]
	if old := *slot; old.c != nil && old.c.Unsettled(old.gen) {
		e.keepLapped(old)
	}
	*slot = posEntry{pos: pos, c: c, gen: gen}
	return c, gen
}

// keepLapped keeps the entry of an unsettled call whose slot of byPos a new call takes. It
// first sweeps out the entries of settled calls once lapped holds as many entries as byPos:
// at most that many calls are unsettled, so lapped stays within twice byPos's size, and the
// sweep's cost is spread over as many insertions.
func (e *engine) keepLapped(ent posEntry) {
	if e.lapped == nil {
		e.lapped = make(map[uint32]posEntry)
	}
	if len(e.lapped) >= len(e.byPos) {
		for pos, old := range e.lapped {
			if !old.c.Unsettled(old.gen) {
				delete(e.lapped, pos)
			}
		}
	}
	e.lapped[uint32(ent.pos)] = ent
}

// byPosition returns the entry of the call submitted at pos (modulo 2³²), if it may still be
// unsettled.
func (e *engine) byPosition(pos uint32) (posEntry, bool) {
	if ent := e.byPos[e.r.subs.Index(uint64(pos))]; ent.c != nil && uint32(ent.pos) == pos {
		return ent, true
	}
	ent, ok := e.lapped[pos]
	if ok {
		delete(e.lapped, pos)
	}
	return ent, ok
}

// posEntry is the record of the call submitted at pos, in its use gen.
type posEntry struct {
	pos uint64
	c   *callcore.Call
	gen uint32
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
		ent, ok := e.byPosition(ev.Pos)
		if !ok {
			return // delivered long ago
		}
		if taken, sent := e.take(ent.c, ent.gen, false); taken {
			e.settle(ent.c, localError(callerr.Cancelled, ent.c.Ops.Path, "call cancelled", nil), callcore.ReasonCancelled, sent)
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

func reasonOf(err error) callcore.Reason {
	ce, ok := err.(*calls.Error)
	if !ok {
		return callcore.ReasonError
	}
	switch ce.Kind() {
	case calls.ErrTimeout:
		return callcore.ReasonTimeout
	case calls.ErrCancelled:
		return callcore.ReasonCancelled
	case calls.ErrTooLarge:
		return callcore.ReasonInvalid
	case calls.ErrShed:
		return callcore.ReasonShed
	}
	return callcore.ReasonError
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
// deadline of its calls, or when the first hedge is due if that is earlier; false if no call is
// unsettled. No hedge can be sent then, since every flight has been decided or left by its
// members: the hedges taken are dropped, so that no timer stays set for them.
func (e *engine) wakeAt() (int64, bool) {
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
	if len(e.settled) > 0 {
		r.out.Push(e.settled...)
		select {
		case r.ready <- struct{}{}:
		default:
		}
	}
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
