package reactor

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/internal/dial"
	"github.com/trixnew/prpc/internal/donectx"
	"github.com/trixnew/prpc/internal/lanecodec"
)

// stream is the state of one stream, the owner of its typed handle (callcore.StreamOwner).
// Its fields are owned as their groups say: set at open, the receiving goroutine's, the ring's
// (streamring.go), and those under mu, which decides who ends the stream.
type stream struct {
	// Set at open, read-only after.
	r          *Reactor
	ops        *callcore.Ops
	req        proto.Message // Watch's request; nil for Bidi
	bidi       bool
	keepLatest bool
	runs       bool // a batch handler (OnMessages) without KeepLatest: carriers are delivered in runs
	meta       bool // ResponseMetadata
	maxWaiting int
	desc       *grpc.StreamDesc
	opts       []grpc.CallOption
	ctx        *streamCtx
	codec      *lanecodec.Codec // encodes on the sender (Watch's request: on the receiver); decodes on the receiver
	msgs, end  callcore.Target
	stopParent func() bool   // stops the watch on StreamOptions.Context; nil without
	sendMax    int           // Bidi: MaxSendQueue
	sendq      chan sendItem // Bidi: capacity sendMax + 1, the last place for CloseSend's marker
	senderDone chan struct{} // Bidi: closed when the sending goroutine exits
	timeout    time.Duration // StreamOptions.Timeout; 0: none
	opened     int64         // when Watch or Bidi ran, with a timeout (on the reactor's clock)
	resub      *resubState   // Resubscribe's policy and the receiver's state of it; nil: off

	// What Stats counts beyond the ring (streamstats.go).
	streamTally

	// The receiver's.
	peer       peer.Peer // written by gRPC as the transport stream ends
	endCarrier callcore.Call

	header, trailer atomic.Pointer[metadata.MD] // with ResponseMetadata, once received
	stopped         atomic.Bool                 // Cancel, CloseStreams, Close: waiting messages are discarded
	wound           bool                        // counted among the table's winding streams; under the table's mutex

	// The ring of carriers (streamring.go): ring and received are the receiver's (received
	// atomic for Stats); consumed is added to by the Tick goroutine for each message it
	// delivers or discards.
	ring     []*callcore.Call
	received atomic.Uint64
	consumed atomic.Uint64
	stalled  atomic.Bool   // the receiver waits on wake for a free place
	wake     chan struct{} // capacity 1
	stalls   atomic.Uint64 // times the receiver stopped reading: its ring was full

	mu        sync.Mutex
	ended     bool         // the end is decided: by the receiver, or by Close for a receiver a hook holds
	abandoned bool         // Close decided the end: the receiver pushes nothing more
	cause     *calls.Error // what stopped the stream first, if anything did
	// transportEnd is what ended a Bidi stream's transport stream (io.EOF for OK), if it
	// ended before anything stopped the stream: nothing that stops it later becomes the cause
	// (noteTransportEnd). Nil until then.
	transportEnd error
	stopCause    *calls.Error   // the first Cancel, CloseStreams or Close, even after the end was decided
	endErr       error          // the end's error, once ended
	latest       *callcore.Call // KeepLatest: the carrier waiting for Tick, if any
	replaced     atomic.Uint64  // KeepLatest: messages replaced while waiting; written under mu, read by Stats
	sendClosed   bool           // Send and CloseSend fail with ErrStreamDone
	unsent       []proto.Message
}

// sendItem is an entry of a Bidi stream's send queue: a message, or CloseSend's marker.
type sendItem struct {
	msg       proto.Message
	closeSend bool
}

// Cancel implements callcore.StreamOwner.
func (s *stream) Cancel() {
	s.stop(localError(callerr.Cancelled, s.ops.Path, "stream cancelled", nil))
}

// stop stops s with cause, unless something stopped it or its end was decided first: no
// message of it is handed to OnMessage any more (stopped is set before stop returns), its
// sending side is closed, and its context ends, which ends its transport stream. The cause is
// set before the context ends, so that the receiver, seeing its transport stream fail, finds
// it.
func (s *stream) stop(cause *calls.Error) {
	// The cause is set with stopped, under mu: a receiver whose push finds the stream stopped
	// and that then decides the end must find the cause, or it would end the stream OK.
	s.mu.Lock()
	if s.cause == nil && !s.ended && s.transportEnd == nil {
		s.cause = cause
	}
	if s.stopCause == nil {
		s.stopCause = cause
	}
	s.stopped.Store(true)
	s.mu.Unlock()
	s.r.streams.wind(s)
	s.fail(cause)
}

// fail ends s with cause, unless something stopped it or its end was decided first, as stop
// does but delivering the messages waiting: the end of its parent context, a message that
// did not encode.
func (s *stream) fail(cause *calls.Error) { s.failWith(cause, context.Canceled) }

// failWith is fail, the transport's context ending with ctxErr (context.DeadlineExceeded
// for a timeout, as gRPC names it).
func (s *stream) failWith(cause *calls.Error, ctxErr error) {
	s.mu.Lock()
	if s.cause == nil && !s.ended && s.transportEnd == nil {
		s.cause = cause
	}
	s.sendClosed = true
	s.mu.Unlock()
	s.ctx.End(ctxErr)
}

// Header implements callcore.StreamOwner.
func (s *stream) Header() metadata.MD {
	if p := s.header.Load(); p != nil {
		return *p
	}
	return nil
}

// Trailer implements callcore.StreamOwner.
func (s *stream) Trailer() metadata.MD {
	if p := s.trailer.Load(); p != nil {
		return *p
	}
	return nil
}

// End implements callcore.StreamOwner: on the Tick goroutine, as the end is delivered, it
// forgets s, folds its counts into its method's (countStreamEnd), and returns the messages
// gRPC never got (those the sender gave back, then the queue's leftovers) and the end's error.
func (s *stream) End() ([]proto.Message, error) {
	unsent, err := s.takeUnsent()
	s.r.countStreamEnd(s.entry, s, err, len(unsent))
	return unsent, err
}

// takeUnsent returns, once, the messages gRPC never got and the end's error: the stop's cause
// rather than OK if a stop discarded messages. On the Tick goroutine, after the stream's last
// message was taken (the end is pushed after it), so discardFrom is final.
func (s *stream) takeUnsent() ([]proto.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	unsent := s.unsent
	for s.sendq != nil {
		select {
		case it := <-s.sendq:
			if !it.closeSend && mutation != "stream-unsent-lost" {
				unsent = append(unsent, it.msg)
			}
			continue
		default:
		}
		break
	}
	s.unsent = nil
	if s.endErr == nil && s.discardFrom.Load() != 0 {
		// The server ended the stream OK, but a stop that came after discarded messages
		// waiting for Tick: nil would say that every message was delivered.
		return unsent, s.stopCause
	}
	return unsent, s.endErr
}

// stopParentWatch stops the watch on the stream's parent context, if any.
func (s *stream) stopParentWatch() {
	if s.stopParent != nil {
		s.stopParent()
	}
}

// streamCtx is the context of a stream's transport stream: the parent's values (with the
// request metadata) and deadline, done when the stream is stopped or its receiver ends it,
// without a timer or goroutine of its own (donectx.State). Unlike a call's callCtx, it has no
// deadline of its own.
type streamCtx struct {
	donectx.State
	parent context.Context
	pick   dial.Pick
}

// Deadline returns the parent's deadline, if any.
func (c *streamCtx) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Value returns the pick slot for dial.PickedKey, and the parent's values otherwise.
func (c *streamCtx) Value(key any) any {
	if _, ok := key.(dial.PickedKey); ok {
		return &c.pick
	}
	return c.parent.Value(key)
}

// refusedStream is the owner of a stream refused at open: it holds only the end's error, and
// the method's entry for counting the end.
type refusedStream struct {
	err   error
	r     *Reactor
	entry *methodEntry
}

func (s *refusedStream) Cancel()                                   {}
func (s *refusedStream) Send(proto.Message) error                  { return calls.ErrStreamDone }
func (s *refusedStream) CloseSend() error                          { return calls.ErrStreamDone }
func (s *refusedStream) Header() metadata.MD                       { return nil }
func (s *refusedStream) Trailer() metadata.MD                      { return nil }
func (s *refusedStream) Take(*callcore.Call) (proto.Message, bool) { return nil, false }
func (s *refusedStream) Release(int) bool                          { return false }
func (s *refusedStream) End() ([]proto.Message, error) {
	s.r.countStreamEnd(s.entry, nil, s.err, 0)
	return nil, s.err
}
func (s *refusedStream) Reopening() bool              { return false }
func (s *refusedStream) Reopen(proto.Message, string) {}
