package callcore

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// StreamMethod is the state of a stream method's descriptor: its operations and the
// grpc.StreamDesc that opening one of its streams hands gRPC. calls.StreamMethod and
// calls.BidiMethod are defined on it, so that package reactor reaches both by converting the
// pointer.
type StreamMethod[Req, Resp proto.Message] struct {
	ops  Ops
	desc grpc.StreamDesc
}

// NewStreamMethod returns the state of the descriptor of the stream method whose operations
// are ops: a server stream, or with clientStreams a bidirectional or client-streaming one.
func NewStreamMethod[Req, Resp proto.Message](ops Ops, clientStreams bool) *StreamMethod[Req, Resp] {
	return &StreamMethod[Req, Resp]{ops: ops, desc: grpc.StreamDesc{
		StreamName:    methodName(ops.Path),
		ServerStreams: true,
		ClientStreams: clientStreams,
	}}
}

// methodName returns the part of path after its last '/'.
func methodName(path string) string {
	for i := len(path) - 1; i >= 0; i-- {
		if path[i] == '/' {
			return path[i+1:]
		}
	}
	return path
}

// Ops returns the method's operations.
func (m *StreamMethod[Req, Resp]) Ops() *Ops { return &m.ops }

// Desc returns the method's stream description, for gRPC's NewStream. Read-only.
func (m *StreamMethod[Req, Resp]) Desc() *grpc.StreamDesc { return &m.desc }

// StreamHandler is the state of calls.StreamHandler: what runs, on the Tick goroutine, for a
// stream's messages and its end.
type StreamHandler[Resp proto.Message] struct {
	OnMessage  func(Resp)
	OnMessages func([]Resp) // instead of OnMessage: a run of messages in one callback
	OnEnd      func(error)
}

// StreamOwner is what a stream's handle and its targets ask of the reactor that runs the
// stream: one per stream. Cancel, Send, CloseSend, Header and Trailer may be called from any
// goroutine and never block; Take and End are called by the stream's targets, on the Tick
// goroutine.
type StreamOwner interface {
	// Cancel ends the stream with ErrCancelled, unless its end is decided already: once it
	// returns, no message of the stream is handed to OnMessage any more.
	Cancel()
	// Send queues msg for the stream's sending goroutine, or returns why it cannot.
	Send(msg proto.Message) error
	// CloseSend queues the end of the client's side after the messages queued before it.
	CloseSend() error
	// Header returns the response header, once received, if the stream asked for it.
	Header() metadata.MD
	// Trailer returns the response trailer once the stream ended, if it asked for it.
	Trailer() metadata.MD
	// Take is called for carrier c, one of the stream's messages: it returns the message to
	// hand to OnMessage, or false if the stream was stopped meanwhile (the message is
	// discarded). Either way c's place is free again once it returns.
	Take(c *Call) (proto.Message, bool)
	// Release is called for a run of n carriers, the stream's next ones, once their
	// messages were taken from them: it frees their places, and reports false if the stream
	// was stopped meanwhile (the messages are discarded), as Take does.
	Release(n int) bool
	// End is called once, for the stream's end: it returns the messages Send accepted that
	// gRPC never got, in the order they were sent, and the end's error (nil for OK).
	End() (unsent []proto.Message, err error)
	// Reopening is called for the stream's reopen carrier: it reports whether the stream is
	// still to be reopened (it was not stopped meanwhile), and so whether Resume runs.
	Reopening() bool
	// Reopen hands the receiver the request of the stream's next attempt: nil for the first
	// request, or, with why not empty, no request, the stream ending with
	// ErrInvalidArgument saying why.
	Reopen(req proto.Message, why string)
}

// Stream is the state of a stream's handle, typed: calls.Stream and calls.BidiStream are
// defined on it. Its two targets, the messages' and the end's, are the same pointer converted
// (Messages, Ended), so that a stream needs no allocation for them.
type Stream[Req, Resp proto.Message] struct {
	owner  StreamOwner
	path   string
	h      StreamHandler[Resp]
	resume func(Resp) Req // Resubscribe's request of a reopening; nil: the first request
	last   Resp           // the last message handed to OnMessage; the Tick goroutine's
	run    []Resp         // OnMessages's slice, reused from one run to the next; the Tick goroutine's

	mu     sync.Mutex
	unsent []Req // moved from the owner by the end's delivery
}

// NewStream returns the handle of a stream of the method at path that owner runs, with h's
// callbacks. SetOwner sets an owner made after the handle.
func NewStream[Req, Resp proto.Message](path string, h StreamHandler[Resp]) *Stream[Req, Resp] {
	return &Stream[Req, Resp]{path: path, h: h}
}

// SetResume sets the function that builds a reopening's request, before the handle or its
// targets are handed out.
func (s *Stream[Req, Resp]) SetResume(resume func(Resp) Req) { s.resume = resume }

// SetOwner sets the stream's owner, before the handle or its targets are handed out.
func (s *Stream[Req, Resp]) SetOwner(o StreamOwner) { s.owner = o }

// Batched reports whether the stream's messages go to OnMessages, in runs.
func (s *Stream[Req, Resp]) Batched() bool { return s.h.OnMessages != nil }

// Path returns the stream's method path.
func (s *Stream[Req, Resp]) Path() string { return s.path }

// Owner returns the stream's owner.
func (s *Stream[Req, Resp]) Owner() StreamOwner { return s.owner }

// Unsent returns the messages Send accepted that gRPC never got, once the end is delivered;
// nil before.
func (s *Stream[Req, Resp]) Unsent() []Req {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.unsent
}

// Messages returns the target of the stream's message carriers.
func (s *Stream[Req, Resp]) Messages() Target { return (*streamMessages[Req, Resp])(s) }

// Ended returns the target of the stream's end.
func (s *Stream[Req, Resp]) Ended() Target { return (*streamEnd[Req, Resp])(s) }

// Reopened returns the target of the stream's reopen carrier (Resubscribe).
func (s *Stream[Req, Resp]) Reopened() Target { return (*streamReopen[Req, Resp])(s) }

// streamMessages is the target of a stream's message carriers.
type streamMessages[Req, Resp proto.Message] Stream[Req, Resp]

// Deliver implements Target: it runs OnMessage (or OnMessages, with a run of one) with c's
// message, unless the stream was stopped since it arrived. It never calls h.Delivered: a
// carrier is not a call.
func (t *streamMessages[Req, Resp]) Deliver(h Host, c *Call) {
	v, ok := t.owner.Take(c)
	if !ok {
		return
	}
	msg, _ := v.(Resp) // the receiver decoded into Ops.NewResponse(), a Resp
	if t.resume != nil {
		t.last = msg
	}
	if t.h.OnMessage == nil {
		t.runMessages(h, append(t.run[:0], msg))
		return
	}
	defer h.Recover()
	t.h.OnMessage(msg)
}

// DeliverRun implements RunTarget: it runs OnMessages once with run's messages, unless the
// stream was stopped since they arrived. Their places are freed once the messages are out of
// the carriers, before OnMessages runs, as Deliver frees one.
func (t *streamMessages[Req, Resp]) DeliverRun(h Host, run []*Call) {
	msgs := t.run[:0]
	for _, c := range run {
		msg, _ := c.Value.(Resp)
		c.Value = nil
		msgs = append(msgs, msg)
	}
	if !t.owner.Release(len(run)) {
		clear(msgs)
		return
	}
	if t.resume != nil {
		t.last = msgs[len(msgs)-1]
	}
	t.runMessages(h, msgs)
}

// runMessages runs OnMessages with msgs, then keeps msgs's array for the next run, cleared so
// that it holds no message the handler was given.
func (t *streamMessages[Req, Resp]) runMessages(h Host, msgs []Resp) {
	t.run = msgs
	defer clear(msgs)
	defer h.Recover()
	t.h.OnMessages(msgs)
}

// streamEnd is the target of a stream's end.
type streamEnd[Req, Resp proto.Message] Stream[Req, Resp]

// Deliver implements Target: it moves the messages gRPC never got into Unsent, then runs
// OnEnd, if set, with the end's error. c is the end's carrier, or nil for a stream refused
// at open; the error comes from the owner either way.
func (t *streamEnd[Req, Resp]) Deliver(h Host, _ *Call) {
	unsent, err := t.owner.End()
	if len(unsent) > 0 {
		typed := make([]Req, 0, len(unsent))
		for _, m := range unsent {
			req, _ := m.(Req) // Send took a Req
			typed = append(typed, req)
		}
		t.mu.Lock()
		t.unsent = typed
		t.mu.Unlock()
	}
	if t.h.OnEnd == nil {
		return
	}
	defer h.Recover()
	t.h.OnEnd(err)
}

// streamReopen is the target of a stream's reopen carrier, which its receiver pushes after the
// last message of an attempt that a reopening follows.
type streamReopen[Req, Resp proto.Message] Stream[Req, Resp]

// Deliver implements Target: unless the stream was stopped meanwhile, it runs Resume with the
// last message delivered and hands the request to the owner (nil without Resume: the first
// request). A Resume that panics or returns nil hands over why instead.
func (t *streamReopen[Req, Resp]) Deliver(h Host, _ *Call) {
	if !t.owner.Reopening() {
		return
	}
	if t.resume == nil {
		t.owner.Reopen(nil, "")
		return
	}
	req, ok := t.runResume(h)
	switch {
	case !ok:
		t.owner.Reopen(nil, "StreamHandler.Resume panicked")
	case any(req) == nil || !req.ProtoReflect().IsValid():
		t.owner.Reopen(nil, "StreamHandler.Resume returned a nil request")
	default:
		t.owner.Reopen(req, "")
	}
}

// runResume runs Resume under h.Recover and reports whether it returned.
func (t *streamReopen[Req, Resp]) runResume(h Host) (req Req, ok bool) {
	defer h.Recover()
	req = t.resume(t.last)
	return req, true
}
