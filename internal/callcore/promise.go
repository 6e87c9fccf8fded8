package callcore

import (
	"sync"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// Method is the state of a method descriptor. calls.Method is defined on it, so that package
// reactor reaches a descriptor's Ops by converting the pointer, with no hook and no assertion.
type Method[Req, Resp proto.Message] struct {
	ops Ops
}

// NewMethod returns the state of the descriptor of the method whose operations are ops.
func NewMethod[Req, Resp proto.Message](ops Ops) *Method[Req, Resp] {
	return &Method[Req, Resp]{ops: ops}
}

// Ops returns the method's operations.
func (m *Method[Req, Resp]) Ops() *Ops { return &m.ops }

// Promise is the state of a promise: the outcome of one call and its callbacks, typed.
// calls.Promise is defined on it, so that package reactor makes one and hands it out by
// converting the pointer. Its fields are unexported, so that users of calls.Promise reach
// none of them.
//
// The promise holds no reference to its call's record, and the reactor's goroutines never
// touch it until Tick delivers the call, so a burst of calls shares no cache line between the
// goroutine that makes promises and prpc's. Cancel names the call by its submission position;
// the first delivery moves the outcome from the record into the promise.
//
// The first Then and the first OnError are kept inline while no other callback has been
// registered, which covers the usual Call(…).Then(…).OnError(…), and so is a first OnSettled
// registered alone; every later callback goes, in order, to the extra's list (more). Inline
// ones were registered before any in more, and at most one of them runs, so running them
// first keeps registration order.
type Promise[Resp proto.Message] struct {
	mu              sync.Mutex
	owner           *OwnerRef
	pos             uint32 // the call's submission position, by which Cancel names it, modulo 2³²
	state           uint8  // Pending, Succeeded or Failed, as visible
	delivered       bool
	redeliverQueued bool
	cancelRequested bool
	then            func(Resp)
	onError         func(error)
	settled         func(Resp, error) // inline only while it is the only callback
	value           Resp
	err             error
	x               *promiseExtra[Resp] // nil unless a promise needs more than the fields above
}

// promiseExtra holds what few promises need, so that a promise is one small allocation: the
// callbacks beyond the inline ones, and the response metadata, when a call asked for it.
type promiseExtra[Resp proto.Message] struct {
	more            []callback[Resp]
	header, trailer metadata.MD
}

// callback is one callback that is not inline: exactly one of its funcs is set.
type callback[Resp proto.Message] struct {
	then    func(Resp)
	onError func(error)
	always  func()
	settled func(Resp, error)
}

// OwnerRef holds a promise's owner, so that a promise keeps one pointer to it rather than an
// interface, half the size. An owner keeps one for all its promises.
type OwnerRef struct{ Owner }

// NewPromise returns a new, pending promise whose call owner runs.
func NewPromise[Resp proto.Message](owner *OwnerRef) *Promise[Resp] {
	return &Promise[Resp]{owner: owner}
}

// Pos returns where the promise records its call's submission position, modulo 2³²:
// reactor.Call writes it, on the calling goroutine, before it hands the call over, so that
// Cancel, called once Call has returned, finds it. A pending call is at most a lap of the
// reactor's ring of submissions behind the newest, far less than 2³² positions, so the low half
// names it.
func (p *Promise[Resp]) Pos() *uint32 { return &p.pos }

// Reject fails the call at submission: the failure is visible at once.
func (p *Promise[Resp]) Reject(err error) {
	p.mu.Lock()
	p.err, p.state = err, Failed
	p.mu.Unlock()
}

// State returns the visible state.
func (p *Promise[Resp]) State() uint8 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Err returns the visible error: nil while pending or on success.
func (p *Promise[Resp]) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Metadata returns the response header and trailer, once delivered.
func (p *Promise[Resp]) Metadata() (header, trailer metadata.MD) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.x == nil {
		return nil, nil
	}
	return p.x.header, p.x.trailer
}

// Cancel asks the owner to cancel the call, once, unless its outcome is visible already.
func (p *Promise[Resp]) Cancel() {
	p.mu.Lock()
	ask := !p.cancelRequested && p.state == Pending
	p.cancelRequested = true
	pos := p.pos
	p.mu.Unlock()
	if ask {
		p.owner.Cancel(pos)
	}
}

// Then registers fn to run with the response if the call succeeds.
func (p *Promise[Resp]) Then(fn func(Resp)) {
	p.mu.Lock()
	if p.then == nil && p.settled == nil && !p.hasMore() {
		p.then = fn
	} else {
		p.add(callback[Resp]{then: fn})
	}
	p.registered()
}

// OnSettled registers fn to run with the response or the error when the call settles.
func (p *Promise[Resp]) OnSettled(fn func(Resp, error)) {
	p.mu.Lock()
	if p.then == nil && p.onError == nil && p.settled == nil && !p.hasMore() {
		p.settled = fn
	} else {
		p.add(callback[Resp]{settled: fn})
	}
	p.registered()
}

// OnError registers fn to run with the error if the call fails.
func (p *Promise[Resp]) OnError(fn func(error)) {
	p.mu.Lock()
	if p.onError == nil && p.settled == nil && !p.hasMore() {
		p.onError = fn
	} else {
		p.add(callback[Resp]{onError: fn})
	}
	p.registered()
}

// Always registers fn to run when the call settles either way.
func (p *Promise[Resp]) Always(fn func()) {
	p.mu.Lock()
	p.add(callback[Resp]{always: fn})
	p.registered()
}

// hasMore reports whether callbacks wait beyond the inline ones; with mu held.
func (p *Promise[Resp]) hasMore() bool { return p.x != nil && len(p.x.more) > 0 }

// add appends cb to the callbacks beyond the inline ones; with mu held.
func (p *Promise[Resp]) add(cb callback[Resp]) {
	if p.x == nil {
		p.x = new(promiseExtra[Resp])
	}
	p.x.more = append(p.x.more, cb)
}

// registered releases mu after a registration and, if the call was delivered already, asks
// the owner to deliver it again, outside the lock.
func (p *Promise[Resp]) registered() {
	redeliver := p.delivered && !p.redeliverQueued
	if redeliver {
		p.redeliverQueued = true
	}
	p.mu.Unlock()
	if redeliver {
		p.owner.Redeliver(p)
	}
}

// Deliver implements Target. The callbacks are removed before they run, so that the promise
// holds no reference to them afterwards.
func (p *Promise[Resp]) Deliver(h Host, rec *Call) {
	p.mu.Lock()
	first := !p.delivered
	if first {
		if rec != nil {
			p.err = rec.Err
			if rec.Err == nil {
				p.value, _ = rec.Value.(Resp) // the lane decoded into Ops.NewResponse(), a Resp
			}
			if rec.Header != nil || rec.Trailer != nil {
				if p.x == nil {
					p.x = new(promiseExtra[Resp])
				}
				p.x.header, p.x.trailer = rec.Header, rec.Trailer
			}
		}
		p.state = Succeeded
		if p.err != nil {
			p.state = Failed
		}
	}
	p.delivered, p.redeliverQueued = true, false
	then, onError, settled := p.then, p.onError, p.settled
	p.then, p.onError, p.settled = nil, nil, nil
	var more []callback[Resp]
	if p.x != nil {
		more, p.x.more = p.x.more, nil
	}
	value, err := p.value, p.err
	p.mu.Unlock()
	if first {
		h.Delivered(rec)
	}
	switch {
	case settled != nil:
		runSettled(h, settled, value, err)
	case err == nil && then != nil:
		runThen(h, then, value)
	case err != nil && onError != nil:
		runOnError(h, onError, err)
	}
	for _, cb := range more {
		switch {
		case cb.then != nil && err == nil:
			runThen(h, cb.then, value)
		case cb.onError != nil && err != nil:
			runOnError(h, cb.onError, err)
		case cb.always != nil:
			runAlways(h, cb.always)
		case cb.settled != nil:
			runSettled(h, cb.settled, value, err)
		}
	}
}

func runThen[Resp proto.Message](h Host, fn func(Resp), v Resp) {
	defer h.Recover()
	fn(v)
}

func runOnError(h Host, fn func(error), err error) {
	defer h.Recover()
	fn(err)
}

func runSettled[Resp proto.Message](h Host, fn func(Resp, error), v Resp, err error) {
	defer h.Recover()
	fn(v, err)
}

func runAlways(h Host, fn func()) {
	defer h.Recover()
	fn()
}
