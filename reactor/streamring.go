package reactor

import (
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
)

// A stream's messages reach Tick in carriers: call records that no reactor goroutine or lane
// sees, owned by their stream, pushed to the outbox as lanes push settled calls, so that Tick
// delivers messages and calls from one queue, in arrival order, under one budget. Each stream
// owns a ring of MaxWaiting carriers, made as first needed, indexed by received (the
// receiver's count of messages pushed) and consumed (the Tick goroutine's count of messages
// delivered or discarded): the receiver reads the next message only while received −
// consumed < MaxWaiting, so at most MaxWaiting messages wait, and while it does not read,
// gRPC returns none of the stream's HTTP/2 window and the server's sends stop.
//
// The stall's handshake is SubmissionRing.BeginSleep's: the receiver sets stalled, then looks
// at consumed again before it parks on wake; Tick adds to consumed, then signals wake if
// stalled is set. One of the two sees the other's write, so no wake-up is lost.
//
// With KeepLatest the ring is one carrier, and the receiver never waits: under mu, a message
// that arrives while the carrier waits replaces its value (latest), and Take takes the value
// under the same mutex.

// reserve returns the carrier for the next message, once the ring has a free place, or false
// if the stream was stopped (its context ended) meanwhile.
func (s *stream) reserve() (*callcore.Call, bool) {
	if s.keepLatest {
		return nil, s.ctx.Err() == nil
	}
	for s.received.Load()-s.consumed.Load() >= uint64(s.maxWaiting) && mutation != "stream-read-ahead" {
		s.stalls.Add(1)
		s.stalled.Store(true)
		if s.received.Load()-s.consumed.Load() < uint64(s.maxWaiting) {
			s.stalled.Store(false)
			break
		}
		select {
		case <-s.wake:
		case <-s.ctx.Done():
		}
		s.stalled.Store(false)
		if s.ctx.Err() != nil {
			return nil, false
		}
	}
	if s.ctx.Err() != nil {
		return nil, false
	}
	i := s.received.Load() % uint64(s.maxWaiting)
	c := s.ring[i]
	if c == nil {
		c = &callcore.Call{Ops: s.ops, Target: s.msgs, Run: s.runs}
		s.ring[i] = c
	}
	return c, true
}

// push queues msg for Tick in carrier c (nil with KeepLatest), unless the stream was stopped
// or its end decided meanwhile (Close abandoned the receiver), and reports whether it did.
// Under mu, which decides the end, so that no message follows it.
func (s *stream) push(c *callcore.Call, msg proto.Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended || s.stopped.Load() {
		return false
	}
	if s.keepLatest {
		if s.latest != nil {
			if mutation != "stream-keep-oldest" {
				s.latest.Value = msg // the newer one takes the older's place
			}
			s.replaced.Add(1)
			return true
		}
		if c = s.ring[0]; c == nil {
			c = &callcore.Call{Ops: s.ops, Target: s.msgs}
			s.ring[0] = c
		}
		s.latest = c
	}
	c.Value = msg
	c.Submitted = s.r.now()
	s.received.Add(1)
	s.r.out.Push(c)
	s.r.wakeHost()
	return true
}

// Take implements callcore.StreamOwner, on the Tick goroutine: it takes carrier c's message
// and frees c's place, waking the receiver if it waits for one, then returns the message
// unless the stream was stopped (the message is discarded, and counted so before its place
// is: streamstats.go).
func (s *stream) Take(c *callcore.Call) (proto.Message, bool) {
	if !s.keepLatest {
		msg := c.Value
		c.Value = nil
		if !s.Release(1) {
			return nil, false
		}
		return msg, true
	}
	stopped := s.stopped.Load() && mutation != "stream-after-cancel"
	if stopped {
		s.noteDiscard()
	}
	s.mu.Lock()
	msg := c.Value
	c.Value, s.latest = nil, nil
	s.mu.Unlock()
	s.consumed.Add(1) // for Stats only: the receiver never waits
	if stopped {
		return nil, false
	}
	return msg, true
}

// Release implements callcore.StreamOwner, on the Tick goroutine, for a run of n carriers
// whose messages were taken out (never with KeepLatest, whose carrier the receiver may refill
// under mu): it frees their places, waking the receiver if it waits for one, and reports
// false if the stream was stopped (the messages are discarded, and counted so before their
// places are, as Take counts one).
func (s *stream) Release(n int) bool {
	stopped := s.stopped.Load() && mutation != "stream-after-cancel"
	if stopped {
		s.noteDiscard()
	}
	s.consumed.Add(uint64(n))
	if s.stalled.Load() && mutation != "stream-lost-wake" {
		select {
		case s.wake <- struct{}{}:
		default:
		}
	}
	return !stopped
}
