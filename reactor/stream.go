package reactor

import (
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
)

// Watch opens a server stream of method m with request req and returns its handle at once.
// It never blocks and does no network I/O; it is safe from any goroutine. opts may be nil.
//
// Each message the server sends runs h.OnMessage once (or goes to h.OnMessages in a run of
// messages that arrived together), on the goroutine that calls Tick (or Shutdown, Close), in
// the order received, under Tick's budget and interleaved with the calls' callbacks in the
// order they arrived; then h.OnEnd runs once, last, with nil if the
// server ended the stream with OK, or with a *calls.Error that names what ended it first: the
// server's status, ErrCancelled (Stream.Cancel, or the end of StreamOptions.Context),
// ErrClosed (CloseStreams, Shutdown, Close), ErrTimeout (StreamOptions.Timeout, or the
// deadline of StreamOptions.Context), ErrTooLarge for a message over
// Limits.MaxResponseBytes. Once Cancel has returned on the Tick goroutine (called from
// another goroutine: from the next Tick on), after CloseStreams and once Close has begun, no
// message of the stream is delivered: only its end.
//
// With StreamOptions.Resubscribe, a stream that the server or the connection ends with one of
// its codes is opened again after a backoff, with the request h.Resume builds on this
// goroutine from the last message delivered, and OnEnd runs only once no reopening follows;
// none follows Cancel, CloseStreams, Shutdown, Close or the timeout. The timeout and the
// backoffs are kept on the reactor's one timer, on Config.Clock.
//
// At most StreamOptions.MaxWaiting messages wait for Tick; while that many wait, prpc stops
// reading the stream, so that HTTP/2's flow control holds the server back (its window, 64 KiB
// by default, is what the connection keeps beyond them). Watch owns req until the stream
// ends, as Call owns its request.
//
// Bad input (a nil request, bad options or metadata), a method outside Config.Methods,
// MaxStreams reached (ErrOverloaded) and a closed reactor (ErrClosed) end the stream at once:
// OnEnd runs at the first Tick that starts after Watch returns, its error NotSent.
//
// A stream takes none of the invoker lanes: a goroutine of its own opens it (gRPC's NewStream
// may wait for a connection), sends req and receives the messages. A nil r or m panics, as
// does a handler with neither or both of OnMessage and OnMessages.
func Watch[Req, Resp proto.Message](r *Reactor, m *calls.StreamMethod[Req, Resp], req Req,
	opts *calls.StreamOptions, h calls.StreamHandler[Req, Resp]) *calls.Stream[Req, Resp] {
	if r == nil {
		panic("prpc: reactor.Watch with a nil *Reactor")
	}
	if m == nil {
		panic("prpc: reactor.Watch with a nil *calls.StreamMethod")
	}
	sm := (*callcore.StreamMethod[Req, Resp])(m)
	s := callcore.NewStream[Req, Resp](sm.Ops().Path, handlerOf("Watch", h))
	var msg proto.Message
	if any(req) != nil {
		msg = req
	}
	s.SetResume(h.Resume)
	r.openStream(s, s.Messages(), s.Ended(), s.Reopened(), sm.Ops(), sm.Desc(), msg, opts)
	return (*calls.Stream[Req, Resp])(s)
}

// Bidi opens a bidirectional or client-streaming stream of method m and returns its handle at
// once, as Watch does a server stream: the same delivery of messages and end, the same
// bounds and the same failures at open. BidiStream.Send queues a message for the stream's
// sending goroutine, which encodes it and hands it to gRPC, and never blocks the caller; at
// most StreamOptions.MaxSendQueue messages wait. Once the stream has ended, BidiStream.Unsent
// lists the messages Send accepted that gRPC never took, to send again on a new stream. A
// client-streaming method's one response is its stream's one message. A nil r or m panics,
// as does a handler with neither or both of OnMessage and OnMessages.
func Bidi[Req, Resp proto.Message](r *Reactor, m *calls.BidiMethod[Req, Resp],
	opts *calls.StreamOptions, h calls.StreamHandler[Req, Resp]) *calls.BidiStream[Req, Resp] {
	if r == nil {
		panic("prpc: reactor.Bidi with a nil *Reactor")
	}
	if m == nil {
		panic("prpc: reactor.Bidi with a nil *calls.BidiMethod")
	}
	sm := (*callcore.StreamMethod[Req, Resp])(m)
	s := callcore.NewStream[Req, Resp](sm.Ops().Path, handlerOf("Bidi", h))
	r.openStream(s, s.Messages(), s.Ended(), nil, sm.Ops(), sm.Desc(), nil, opts)
	return (*calls.BidiStream[Req, Resp])(s)
}

// CloseStreams ends every open stream as Close does: none of their messages is delivered any
// more, and each one's OnEnd runs, with ErrClosed, at a later Tick. r stays open: calls and
// streams opened afterwards are served. Safe from any goroutine; it never blocks.
func (r *Reactor) CloseStreams() {
	r.streams.stopAll(false)
}

// handlerOf returns h's callbacks for the stream's typed state, or panics, naming what (Watch
// or Bidi), unless h has exactly one of OnMessage and OnMessages.
func handlerOf[Req, Resp proto.Message](what string, h calls.StreamHandler[Req, Resp]) callcore.StreamHandler[Resp] {
	switch {
	case h.OnMessage == nil && h.OnMessages == nil:
		panic("prpc: reactor." + what + " with neither StreamHandler.OnMessage nor OnMessages")
	case h.OnMessage != nil && h.OnMessages != nil:
		panic("prpc: reactor." + what + " with both StreamHandler.OnMessage and OnMessages: set one")
	}
	return callcore.StreamHandler[Resp]{OnMessage: h.OnMessage, OnMessages: h.OnMessages, OnEnd: h.OnEnd}
}
