package reactor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
)

// engine is the state owned by the reactor goroutine: the deadline heap, this turn's admitted
// calls for the ready queue, the count of queued calls not yet accounted for, and the batch of
// calls settled in this turn.
type engine struct {
	r        *Reactor
	heap     deadlineHeap
	admitted []*callcore.Call
	// queued counts the calls pushed to the ready queue whose fate the reactor has not yet
	// learnt: each leaves the count once, when it is dropped or its completion arrives.
	queued int
	// finished counts, per invoker, the completions taken this turn: they leave the InFlight
	// and load gauges once this turn's settled calls are queued for Tick, so that a Stats
	// reader who sees a call gone from InFlight can Tick and get it.
	finished []int32
	settled  []*callcore.Call
	events   []event
	done     []completion
	timer    Timer
	armed    bool  // the timer is set and has not been seen to fire
	armedAt  int64 // the deadline the timer is set for, while armed
	closing  bool
	cut      int
	now      time.Time // read once per turn: the clock costs ~100 ns a read on some VMs
	nowNs    int64     // now, as r.nanos(now)
}

// start launches the reactor goroutine and the invoker lanes.
func (r *Reactor) start() {
	e := &engine{r: r, timer: r.clock.NewTimer(time.Hour), finished: make([]int32, r.cfg.Workers)}
	e.timer.Stop()
	for inv := range r.cfg.Workers {
		for range r.cfg.BatchSize {
			r.lanes.Add(1)
			go r.lane(inv)
		}
	}
	go e.run()
}

func (e *engine) run() {
	r := e.r
	for {
		select {
		case <-r.in.wake:
		case <-e.timer.C():
			e.armed = false
		}
		e.events, e.done = r.in.take(e.events, e.done)
		e.now = r.clock.Now()
		e.nowNs = r.nanos(e.now)
		// Completions first: a call whose result arrived with a Close in the same batch gets
		// its result, not ErrClosed.
		for i := range e.done {
			d := &e.done[i]
			e.finished[d.inv]++
			e.complete(d.c, &d.res)
		}
		for i := range e.events {
			e.handle(&e.events[i])
		}
		e.expire()
		e.dispatch()
		e.flush()
		e.release()
		if e.closing && e.heap.live() == 0 && e.queued == 0 {
			e.shutdown()
			return
		}
		e.arm()
	}
}

func (e *engine) handle(ev *event) {
	c := ev.c
	switch ev.kind {
	case evSubmit:
		e.admit(c)
	case evForward, evRedeliver:
		e.settled = append(e.settled, c)
	case evCancel:
		if !c.Settled && c.Admitted {
			var cause error
			if parent := c.Parent(); parent != nil {
				cause = parent.Err()
			}
			if errors.Is(cause, context.DeadlineExceeded) { // the parent's earlier deadline applies
				e.settle(c, nil, calls.NewError(calls.ErrTimeout, c.Ops.Path, "deadline of the parent context exceeded", cause), callcore.ReasonTimeout)
				return
			}
			e.settle(c, nil, calls.NewError(calls.ErrCancelled, c.Ops.Path, "call cancelled", cause), callcore.ReasonCancelled)
		}
	case evClose:
		e.closing = true
	case evAbort:
		e.abort(ev.err)
	case evNotify:
		if f := e.r.cfg.OnReady; f != nil {
			f()
		}
	}
}

// admit schedules a newly submitted call.
func (e *engine) admit(c *callcore.Call) {
	if c.Deadline <= e.nowNs {
		e.timeout(c)
		return
	}
	e.heap.push(c)
	if parent := c.Parent(); parent != nil && parent.Done() != nil {
		owner := &e.r.owner
		c.Extra.StopParent = context.AfterFunc(parent, func() { owner.Cancel(c) })
	}
	e.admitted = append(e.admitted, c)
}

// dispatch hands this turn's admitted calls, but those already settled, to the lanes' ready
// queue in one batch.
func (e *engine) dispatch() {
	if len(e.admitted) == 0 {
		return
	}
	ready := e.admitted[:0]
	for _, c := range e.admitted {
		if !c.Settled {
			c.Queued = true
			ready = append(ready, c)
		}
	}
	e.queued += len(ready)
	e.r.queued.Add(int32(len(ready)))
	e.r.work.push(ready)
	clear(e.admitted)
	e.admitted = e.admitted[:0]
}

// complete takes an invoker lane's report that c's transport call returned res.
func (e *engine) complete(c *callcore.Call, res *laneResult) {
	e.queued--
	c.Ctx.(*callCtx).cancel()
	c.Ctx = nil
	e.r.backends.record(res.peer, res.picked, res.err)
	if c.Settled {
		return
	}
	c.Header, c.Trailer = res.header, res.trailer
	reason := callcore.ReasonNone
	if res.err != nil {
		reason = reasonOf(res.err)
	}
	e.settle(c, res.value, res.err, reason)
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
	}
	return callcore.ReasonError
}

// expire settles every call whose deadline has passed.
func (e *engine) expire() {
	for c := e.heap.earliest(); c != nil && c.Deadline <= e.nowNs; c = e.heap.earliest() {
		e.timeout(c)
	}
}

func (e *engine) timeout(c *callcore.Call) {
	elapsed, timeout := time.Duration(e.nowNs-c.Submitted), time.Duration(c.Deadline-c.Submitted)
	msg := fmt.Sprintf("deadline exceeded after %v (timeout %v)", elapsed.Round(time.Millisecond), timeout)
	if c.Claim.Load() != callcore.Running {
		msg += "; never sent"
	}
	e.settle(c, nil, calls.NewError(calls.ErrTimeout, c.Ops.Path, msg, nil), callcore.ReasonTimeout)
}

// abort settles every unsettled call with ErrClosed wrapping cause, for Close.
func (e *engine) abort(cause error) {
	// Drop every call no lane has claimed before cancelling any: a cancelled call frees its
	// lane, which would otherwise send the next queued call before this loop reached it.
	for _, ent := range e.heap.h {
		if ent.c.InHeap {
			e.drop(ent.c)
		}
	}
	for c := e.heap.earliest(); c != nil; c = e.heap.earliest() {
		e.cut++
		e.settle(c, nil, calls.NewError(calls.ErrClosed, c.Ops.Path, "reactor closed before the call completed: "+cause.Error(), cause), callcore.ReasonClosed)
	}
}

// settle decides c's outcome, once, and queues it for delivery.
func (e *engine) settle(c *callcore.Call, value proto.Message, err error, reason callcore.Reason) {
	c.Settled = true
	e.heap.remove(c)
	if c.Extra != nil && c.Extra.StopParent != nil {
		c.Extra.StopParent()
		c.Extra.StopParent = nil
	}
	if !e.drop(c) && c.Claim.Load() == callcore.Running && c.Ctx != nil {
		c.Ctx.(*callCtx).cancel() // the lane returns soon and reports completion
	}
	c.Value = value
	c.Err = err
	c.Reason = reason
	e.settled = append(e.settled, c)
}

// release takes this turn's finished calls off the InFlight and load gauges.
func (e *engine) release() {
	var total int32
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
func (e *engine) drop(c *callcore.Call) bool {
	if !c.Claim.CompareAndSwap(callcore.Unclaimed, callcore.Dropped) {
		return false
	}
	releaseRequest(c)
	if c.Queued {
		e.queued--
		e.r.queued.Add(-1)
	}
	return true
}

// flush queues this turn's settled calls for Tick and wakes the host once.
func (e *engine) flush() {
	if len(e.settled) == 0 {
		return
	}
	e.r.out.push(e.settled...)
	clear(e.settled)
	e.settled = e.settled[:0]
	e.r.wakeHost()
}

// arm sets the timer for the earliest deadline. A timer already set for that deadline or an
// earlier one stays as it is: when it fires, the turn finds nothing due and moves it on. In a
// burst the earliest deadline moves on almost every turn, as the oldest calls complete, and
// moving the timer each time would cost a runtime timer update per turn for nothing.
func (e *engine) arm() {
	c := e.heap.earliest()
	switch {
	case c == nil:
		if e.armed {
			e.timer.Stop()
			e.armed = false
		}
	case e.armed && e.armedAt <= c.Deadline:
	default:
		e.timer.Reset(max(e.r.timeAt(c.Deadline).Sub(e.r.clock.Now()), 0)) // now, after this turn's work
		e.armed, e.armedAt = true, c.Deadline
	}
}

// shutdown stops the invokers, closes an owned connection, settles whatever raced with
// Close, and signals that the reactor goroutine is done.
func (e *engine) shutdown() {
	r := e.r
	e.timer.Stop()
	r.work.close() // every call left in it was dropped, its request released
	r.lanes.Wait()
	if r.cc != nil {
		if err := r.cc.Close(); err != nil {
			r.cfg.Logger.Warn("prpc: closing the connection", "error", err)
		}
		r.subconns.release()
	}
	for _, ev := range r.in.close() {
		switch ev.kind {
		case evSubmit: // admitted before Close, pushed after the last turn
			releaseRequest(ev.c)
			ev.c.Settled = true
			ev.c.Err = calls.NewError(calls.ErrClosed, ev.c.Ops.Path, "reactor closed before the call was sent", nil)
			ev.c.Reason = callcore.ReasonClosed
			e.settled = append(e.settled, ev.c)
		case evForward, evRedeliver:
			e.settled = append(e.settled, ev.c)
		}
	}
	if len(e.settled) > 0 {
		r.out.push(e.settled...)
		select {
		case r.ready <- struct{}{}:
		default:
		}
	}
	r.cut = e.cut
	close(r.done)
}

func releaseRequest(c *callcore.Call) {
	if c.Request != nil {
		c.Request.Release()
		c.Request = nil
	}
}

// wakeHost signals Ready and OnReady, once until the next Tick drains.
func (r *Reactor) wakeHost() {
	if !r.armed.CompareAndSwap(false, true) {
		return
	}
	select {
	case r.ready <- struct{}{}:
	default:
	}
	if r.cfg.OnReady != nil {
		r.cfg.OnReady()
	}
}
