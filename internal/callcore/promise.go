package callcore

import (
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

// Promise is the state of a promise: the untyped call and the typed callbacks. calls.Promise
// is defined on it, so that package reactor makes one and hands it out by converting the
// pointer. Its fields are unexported, so that users of calls.Promise reach none of them.
//
// The callbacks are guarded by the call's mu. The first Then and the first OnError are kept
// inline while no other callback has been registered, which covers the usual
// Call(…).Then(…).OnError(…); every later callback goes, in order, to more. Inline ones were
// registered before any in more, and at most one of the two runs, so running them first
// keeps registration order.
type Promise[Resp proto.Message] struct {
	c       Call
	then    func(Resp)
	onError func(error)
	more    *[]callback[Resp]
}

// callback is one callback that is not inline: exactly one of its funcs is set.
type callback[Resp proto.Message] struct {
	then    func(Resp)
	onError func(error)
	always  func()
}

// NewPromise returns a new promise, with its call, for one call of m.
func NewPromise[Req, Resp proto.Message](m *Method[Req, Resp]) *Promise[Resp] {
	p := &Promise[Resp]{}
	p.c.Ops = &m.ops
	p.c.Target = p
	return p
}

// Call returns the promise's call.
func (p *Promise[Resp]) Call() *Call { return &p.c }

// Then registers fn to run with the response if the call succeeds.
func (p *Promise[Resp]) Then(fn func(Resp)) {
	p.c.mu.Lock()
	if p.then == nil && p.more == nil {
		p.then = fn
	} else {
		p.add(callback[Resp]{then: fn})
	}
	p.registered()
}

// OnError registers fn to run with the error if the call fails.
func (p *Promise[Resp]) OnError(fn func(error)) {
	p.c.mu.Lock()
	if p.onError == nil && p.more == nil {
		p.onError = fn
	} else {
		p.add(callback[Resp]{onError: fn})
	}
	p.registered()
}

// Always registers fn to run when the call settles either way.
func (p *Promise[Resp]) Always(fn func()) {
	p.c.mu.Lock()
	p.add(callback[Resp]{always: fn})
	p.registered()
}

// add appends cb to more; with mu held.
func (p *Promise[Resp]) add(cb callback[Resp]) {
	if p.more == nil {
		p.more = new([]callback[Resp])
	}
	*p.more = append(*p.more, cb)
}

// registered releases mu after a registration and, if the call was delivered already, asks
// the owner to deliver it again, outside the lock.
func (p *Promise[Resp]) registered() {
	redeliver := p.c.registered()
	p.c.mu.Unlock()
	if redeliver {
		p.c.Owner.Redeliver(&p.c)
	}
}

// Deliver implements Target. The callbacks are removed before they run, so that the promise
// holds no reference to them afterwards.
func (p *Promise[Resp]) Deliver(h Host) {
	c := &p.c
	c.mu.Lock()
	first := c.markDelivered()
	then, onError, more := p.then, p.onError, p.more
	p.then, p.onError, p.more = nil, nil, nil
	c.mu.Unlock()
	if first {
		h.Delivered(c)
	}
	var value Resp
	if c.Err == nil {
		value, _ = c.Value.(Resp) // the lane decoded into Ops.NewResponse(), a Resp
	}
	if c.Err == nil && then != nil {
		runThen(h, then, value)
	} else if c.Err != nil && onError != nil {
		runOnError(h, onError, c.Err)
	}
	if more == nil {
		return
	}
	for _, cb := range *more {
		switch {
		case cb.then != nil && c.Err == nil:
			runThen(h, cb.then, value)
		case cb.onError != nil && c.Err != nil:
			runOnError(h, cb.onError, c.Err)
		case cb.always != nil:
			runAlways(h, cb.always)
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

func runAlways(h Host, fn func()) {
	defer h.Recover()
	fn()
}
