package reactor

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callerr"
)

// Send implements callcore.StreamOwner: one send on the queue, which cannot block, since
// Send and CloseSend add under mu and leave room for CloseSend's marker.
func (s *stream) Send(msg proto.Message) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.sendClosed:
		return calls.ErrStreamDone
	case len(s.sendq) >= s.sendMax:
		return localError(callerr.Overloaded, s.ops.Path,
			fmt.Sprintf("%d messages wait to be sent, the StreamOptions.MaxSendQueue limit", s.sendMax), nil)
	}
	s.sendq <- sendItem{msg: msg}
	return nil
}

// CloseSend implements callcore.StreamOwner: the marker follows the messages queued before it.
func (s *stream) CloseSend() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sendClosed {
		return calls.ErrStreamDone
	}
	s.sendClosed = true
	s.sendq <- sendItem{closeSend: true}
	return nil
}

// sendLoop is a Bidi stream's sending goroutine: it hands the queued messages to gRPC in
// order, encoding each with the stream's codec in SendMsg, until CloseSend's marker, a failed
// SendMsg or the stream's end. A message SendMsg refused goes back to the stream, for Unsent,
// ahead of the queue's leftovers; one that did not encode also ends the stream
// (ErrInvalidArgument, ErrTooLarge), not NotSent: gRPC had opened it, so the server had it,
// and may have taken the messages before. The codec forgets each message's buffer, which gRPC's
// write queue may still hold after SendMsg returns.
func (s *stream) sendLoop(cs grpc.ClientStream) {
	defer close(s.senderDone)
	done := s.ctx.Done()
	for {
		var it sendItem
		select {
		case it = <-s.sendq:
		case <-done:
			return
		}
		if it.closeSend {
			_ = cs.CloseSend() // fails only once the stream has ended, which RecvMsg reports
			return
		}
		err := cs.SendMsg(it.msg)
		encodeErr := s.codec.Err()
		s.codec.Forget()
		if err == nil {
			s.sent.Add(1)
			continue
		}
		s.mu.Lock()
		s.unsent = append(s.unsent, it.msg)
		s.mu.Unlock()
		if encodeErr != nil {
			s.fail(encodeFailure(s, encodeErr))
		}
		return
	}
}
