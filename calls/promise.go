package calls

import (
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
)

// Promise is the outcome of one call, to come. Only package reactor makes promises.
//
// Callbacks registered with Then, OnError, OnSettled and Always run on the goroutine that calls
// the reactor's Tick (or Shutdown, Close), in registration order, each exactly once: never
// inside the method that registers them and never on another goroutine. A callback registered
// after the outcome was delivered runs at the next Tick. Once its callbacks have run, the
// promise holds no reference to them. A callback that panics does not affect the others; the
// panic goes to the reactor's OnCallbackPanic.
//
// All methods are safe for concurrent use.
type Promise[Resp proto.Message] callcore.Promise[Resp]

// core returns the promise's state.
func (p *Promise[Resp]) core() *callcore.Promise[Resp] { return (*callcore.Promise[Resp])(p) }

// Then registers fn to run with the response if the call succeeds, and returns p.
func (p *Promise[Resp]) Then(fn func(Resp)) *Promise[Resp] {
	if fn == nil {
		panic("prpc: Promise.Then called with a nil func")
	}
	p.core().Then(fn)
	return p
}

// OnError registers fn to run with the error if the call fails, and returns p. The error is
// a *Error.
func (p *Promise[Resp]) OnError(fn func(error)) *Promise[Resp] {
	if fn == nil {
		panic("prpc: Promise.OnError called with a nil func")
	}
	p.core().OnError(fn)
	return p
}

// OnSettled registers fn to run when the call settles, with the response and a nil error if
// it succeeds, or with the zero response and its *Error if it fails, and returns p. It is the
// promise's one-callback form: cheaper than a Then and an OnError, since it is one closure and
// one registration.
func (p *Promise[Resp]) OnSettled(fn func(Resp, error)) *Promise[Resp] {
	if fn == nil {
		panic("prpc: Promise.OnSettled called with a nil func")
	}
	p.core().OnSettled(fn)
	return p
}

// Always registers fn to run when the call settles either way, and returns p.
func (p *Promise[Resp]) Always(fn func()) *Promise[Resp] {
	if fn == nil {
		panic("prpc: Promise.Always called with a nil func")
	}
	p.core().Always(fn)
	return p
}

// State returns Pending until Tick has delivered the outcome, then Succeeded or Failed. A
// call rejected at submission is Failed at once.
func (p *Promise[Resp]) State() State { return State(p.core().State()) }

// Err returns nil while the call is pending or if it succeeded, and its *Error once a failure
// is visible (at once for a call rejected at submission, otherwise once Tick has delivered
// it).
func (p *Promise[Resp]) Err() error { return p.core().Err() }

// Header returns the response headers the server sent, once the outcome is visible; nil
// before, if the call never reached the server, or if nobody asked for them
// (Options.ResponseMetadata, reactor.MethodPolicy.ResponseMetadata); empty if the headers
// were larger than limits.Limits.MaxMetadataBytes, which drops them whole.
func (p *Promise[Resp]) Header() metadata.MD {
	h, _ := p.core().Metadata()
	return h
}

// Trailer returns the response trailers the server sent, once the outcome is visible; nil
// before, if the call never reached the server, or if nobody asked for them
// (Options.ResponseMetadata, reactor.MethodPolicy.ResponseMetadata); empty if the trailers
// were larger than limits.Limits.MaxMetadataBytes, which drops them whole.
func (p *Promise[Resp]) Trailer() metadata.MD {
	_, t := p.core().Metadata()
	return t
}

// Cancel gives up on the call: unless it has settled already, it settles with ErrCancelled
// and its transport call is cancelled (the server sees its context cancelled). The callbacks
// still run, at a later Tick. Cancel never blocks and may be called more than once.
func (p *Promise[Resp]) Cancel() { p.core().Cancel() }
