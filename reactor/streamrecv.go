package reactor

import (
	"context"
	"errors"
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/internal/dial"
	"github.com/trixnew/prpc/internal/limitcheck"
)

// run is a stream's receiving goroutine: it runs the stream's attempts (one, or more with
// Resubscribe: awaitReopen) and then decides the end and pushes it, last. It exits without
// pushing anything if Close decided the end meanwhile (abandon).
func (s *stream) run() {
	defer s.r.streams.exit()
	defer s.stopParentWatch()
	for {
		n := s.received.Load()
		streamed, err := s.attempt()
		if !s.reopens(err, s.receivedSince(n)) || !s.awaitReopen() {
			s.claimEnd(err, streamed, false)
			return
		}
	}
}

// attempt opens the transport stream (gRPC's NewStream may wait for a connection), sends
// Watch's request or starts Bidi's sending goroutine, then reads messages into the ring's
// carriers while it has room, and pushes them to the outbox. It returns whether gRPC gave it
// a transport stream and what ended it (nil if the stream was stopped before it opened).
func (s *stream) attempt() (streamed bool, err error) {
	if s.ctx.Err() != nil { // stopped before it opened
		return false, nil
	}
	cs, err := s.r.conn.NewStream(s.ctx, s.desc, s.ops.Path, s.opts...)
	if err != nil {
		return s.attemptPeer().Addr != nil, err
	}
	if s.bidi {
		go s.sendLoop(cs)
	} else if err := s.sendRequest(cs); err != nil {
		return true, err
	}
	err = s.receive(cs)
	if s.bidi {
		if err != nil {
			s.noteTransportEnd(err)
		}
		s.ctx.End(context.Canceled) // the sender stops
		<-s.senderDone
	}
	if s.meta {
		md := s.r.keepMetadataOf(s.ops.Path, "trailer", cs.Trailer())
		s.trailer.Store(&md)
	}
	return true, err
}

// sendRequest sends Watch's request and closes the client's side. An error is the codec's
// (the request did not encode: never sent) or the transport's; io.EOF, a stream the server
// ended already, leaves the end to RecvMsg, which reports it.
func (s *stream) sendRequest(cs grpc.ClientStream) error {
	if err := cs.SendMsg(s.req); err != nil {
		if encodeErr := s.codec.Err(); encodeErr != nil {
			s.codec.Forget()
			return encodeError(s, encodeErr)
		}
		s.codec.Forget()
		if !errors.Is(err, io.EOF) {
			return err
		}
		return nil
	}
	s.codec.Forget()
	return cs.CloseSend()
}

// receive reads the stream's messages into the ring while it has room, and returns the error
// that ended reading: RecvMsg's (io.EOF for OK), or nil if the stream was stopped.
func (s *stream) receive(cs grpc.ClientStream) error {
	first := true
	for {
		c, ok := s.reserve()
		if !ok {
			return nil
		}
		msg := s.ops.NewResponse()
		if err := cs.RecvMsg(msg); err != nil {
			return err
		}
		if first && s.meta {
			if md, err := cs.Header(); err == nil {
				md = s.r.keepMetadataOf(s.ops.Path, "header", md)
				s.header.Store(&md)
			}
		}
		first = false
		if !s.push(c, msg) {
			return nil
		}
	}
}

// claimEnd decides the stream's end, unless it is decided already, and queues it for Tick,
// after every message pushed before it, and reports whether it did. err is what ended the
// transport stream (nil or io.EOF for OK, or an *calls.Error of prpc's own); streamed says
// whether gRPC gave it a transport stream. With abandon, Close decides the end of a stream
// whose receiver a hook holds: ErrClosed, and the receiver pushes nothing more.
func (s *stream) claimEnd(err error, streamed, abandon bool) bool {
	s.mu.Lock()
	if s.ended && mutation != "stream-end-twice" {
		s.mu.Unlock()
		return false
	}
	s.ended, s.abandoned, s.sendClosed = true, abandon, true
	switch {
	case !abandon || s.cause != nil:
	case s.transportEnd != nil: // the server's end came first; the receiver waits for its sender
		err = s.transportEnd
	default:
		s.cause = localError(callerr.Closed, s.ops.Path, "a hook of the host held the stream's goroutine when the reactor closed", nil)
	}
	s.endErr = s.endError(err, streamed)
	s.mu.Unlock()
	s.r.streams.wind(s)
	s.endCarrier.Submitted = s.r.now()
	if mutation == "stream-end-hostq" {
		s.r.deliverNext(s.end) // the end goes ahead of the messages waiting in the outbox
		return true
	}
	s.r.out.Push(&s.endCarrier)
	s.r.wakeHost()
	return true
}

// noteTransportEnd records that a Bidi stream's transport stream ended with err, unless
// something stopped the stream first. Its receiver decides the end only once its sending
// goroutine has exited, which a hook of the host may hold: meanwhile, a stop, a timeout or a
// message that does not encode came after the server's end and does not name the end, and
// Close, giving up on the receiver, ends the stream with err.
func (s *stream) noteTransportEnd(err error) {
	s.mu.Lock()
	if s.cause == nil && !s.ended && mutation != "stream-late-cause" {
		s.transportEnd = err
	}
	s.mu.Unlock()
}

// endError returns the end's error, with mu held: the cause that stopped the stream first,
// else the transport's (nil for OK). It is NotSent if gRPC gave the stream no transport
// stream, on a connection where that tells (unsentKnown), or if the request never encoded.
func (s *stream) endError(err error, streamed bool) error {
	var e *calls.Error
	switch {
	case s.cause != nil:
		e = s.cause
	case err == nil || errors.Is(err, io.EOF):
		return nil
	case errors.As(err, &e): // prpc's own: an encoding error, NotSent already
		return e
	default:
		var trailer metadata.MD
		if p := s.trailer.Load(); p != nil {
			trailer = *p
		}
		e = s.r.streamStatusError(s, err, trailer)
	}
	if !streamed && s.r.unsentKnownStream() {
		e = markNotSent(e) // not handed out yet
	}
	return e
}

// encodeError is the error of Watch's request that did not encode: never sent.
func encodeError(s *stream, err error) *calls.Error { return markNotSent(encodeFailure(s, err)) }

// encodeFailure is the error of a message of s that did not encode: ErrTooLarge over
// MaxRequestBytes, else ErrInvalidArgument.
func encodeFailure(s *stream, err error) *calls.Error {
	var se *limitcheck.SizeError
	if errors.As(err, &se) {
		return localError(callerr.TooLarge, s.ops.Path, err.Error(), nil)
	}
	return localError(callerr.InvalidArgument, s.ops.Path, "encoding the request: "+err.Error(), err)
}

// streamStatusError is the error of a stream that gRPC or the server ended with err, as
// transportError makes a call's: a failed security handshake as its cause, the plaintext
// hint, a message over MaxResponseBytes named as such.
func (r *Reactor) streamStatusError(s *stream, err error, trailer metadata.MD) *calls.Error {
	if he := r.handshakes.Cause(err); he != nil {
		return handshakeError(s.ops.Path, err, trailer, he)
	}
	if r.handshakes.Plaintext() {
		err = dial.WithPlaintextHint(err)
	}
	return statusError(s.ops.Path, err, trailer, r.cfg.Limits.MaxResponseBytes, 0)
}

// unsentKnownStream reports whether a stream that gRPC never gave a transport stream was
// never sent: on a connection prpc dialled with the service config it generates, which
// retries no stream method (unsentKnown).
func (r *Reactor) unsentKnownStream() bool {
	return r.cc != nil && r.cfg.ServiceConfig == "" && !r.cfg.ServiceConfigLookup && r.ownScheme == ""
}
