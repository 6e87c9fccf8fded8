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

// engine is the state owned by the reactor goroutine: the deadline heap, the calls waiting
// for an invoker slot, the invokers' loads, and the batch of calls settled in this turn.
type engine struct {
	r        *Reactor
	heap     deadlineHeap
	waiting  fifo
	loads    []int
	invokers []chan *callcore.Call
	inFlight int
	settled  []*callcore.Call
	events   []event
	done     []completion
	timer    Timer
	closing  bool
	cut      int
	now      time.Time // read once per turn: the clock costs ~100 ns a read on some VMs
	nowNs    int64     // now, as r.nanos(now)
}

// start launches the reactor goroutine and the invoker lanes.
func (r *Reactor) start() {
	e := &engine{
		r:        r,
		loads:    make([]int, r.cfg.Workers),
		invokers: make([]chan *callcore.Call, r.cfg.Workers),
		timer:    r.clock.NewTimer(time.Hour),
	}
	e.timer.Stop()
	for i := range e.invokers {
		ch := make(chan *callcore.Call, r.cfg.BatchSize)
		e.invokers[i] = ch
		for range r.cfg.BatchSize {
			r.lanes.Add(1)
			go r.lane(ch)
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
		}
		e.events, e.done = r.in.take(e.events, e.done)
		e.now = r.clock.Now()
		e.nowNs = r.nanos(e.now)
		// Completions first: a call whose result arrived with a Close in the same batch gets
		// its result, not ErrClosed.
		for i := range e.done {
			e.complete(e.done[i].c, &e.done[i].res)
		}
		for i := range e.events {
			e.handle(&e.events[i])
		}
		e.expire()
		e.dispatch()
		e.flush()
		e.publish()
		if e.closing && e.heap.live() == 0 && e.inFlight == 0 {
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
	e.waiting.push(c)
}

// dispatch hands waiting calls to invokers with a free slot, least loaded first.
func (e *engine) dispatch() {
	r := e.r
	for e.waiting.len() > 0 {
		inv := e.pickInvoker()
		if inv < 0 {
			break
		}
		c := e.waiting.pop()
		if c.Settled {
			releaseRequest(c)
			continue
		}
		parent := c.Parent()
		if parent == nil {
			parent = context.Background()
		}
		// The native deadline is on the system clock; with a manual clock it is the time left.
		deadline := r.timeAt(c.Deadline)
		if _, system := r.clock.(systemClock); !system {
			deadline = time.Now().Add(deadline.Sub(r.clock.Now()))
		}
		c.Ctx = newCallCtx(parent, deadline)
		c.InFlight = true
		c.Invoker = int32(inv)
		e.loads[inv]++
		e.inFlight++
		e.invokers[inv] <- c // never blocks: the channel holds BatchSize and load ≤ BatchSize
	}
}

func (e *engine) pickInvoker() int {
	best, bestLoad := -1, e.r.cfg.BatchSize
	for i, l := range e.loads {
		if l < bestLoad {
			best, bestLoad = i, l
			if l == 0 {
				break
			}
		}
	}
	return best
}

// complete takes an invoker's report that c's transport call returned res.
func (e *engine) complete(c *callcore.Call, res *laneResult) {
	c.InFlight = false
	e.loads[c.Invoker]--
	e.inFlight--
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
	if !c.InFlight {
		msg += "; never sent"
	}
	e.settle(c, nil, calls.NewError(calls.ErrTimeout, c.Ops.Path, msg, nil), callcore.ReasonTimeout)
}

// abort settles every unsettled call with ErrClosed wrapping cause, for Close.
func (e *engine) abort(cause error) {
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
	if c.InFlight {
		c.Ctx.(*callCtx).cancel() // the lane returns soon and reports completion, which frees its slot
	}
	c.Value = value
	c.Err = err
	c.Reason = reason
	e.settled = append(e.settled, c)
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

// publish makes the engine's gauges visible to Stats.
func (e *engine) publish() {
	r := e.r
	for i, l := range e.loads {
		r.loads[i].Store(int32(l))
	}
	r.queued.Store(int32(e.waiting.len()))
	r.inFlight.Store(int32(e.inFlight))
}

// arm sets the timer for the earliest deadline.
func (e *engine) arm() {
	c := e.heap.earliest()
	if c == nil {
		e.timer.Stop()
		return
	}
	e.timer.Reset(max(e.r.timeAt(c.Deadline).Sub(e.r.clock.Now()), 0)) // now, after this turn's work
}

// shutdown stops the invokers, closes an owned connection, settles whatever raced with
// Close, and signals that the reactor goroutine is done.
func (e *engine) shutdown() {
	r := e.r
	e.timer.Stop()
	for _, ch := range e.invokers {
		close(ch)
	}
	r.lanes.Wait()
	for e.waiting.len() > 0 {
		releaseRequest(e.waiting.pop())
	}
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
	e.publish()
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
