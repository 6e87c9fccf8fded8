package reactor

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
)

// Resubscription and the stream's timeout. A receiver whose attempt ends with one of
// Resubscribe's codes, its stream not stopped nor failed and MaxAttempts not spent, pushes
// the reopen carrier after the attempt's last message and schedules its backoff on the
// reactor's one timer (streamSchedule). Tick delivers the carrier after every message of the
// attempt, so Resume runs on the host given the last message delivered; its request comes
// back through resumed. The receiver opens the next attempt once both the request and the
// backoff's end are there; if the stream's context ends first (Cancel, CloseStreams, Close,
// the timeout, the parent context), it ends the stream instead, with that cause. The timeout
// is a due time scheduled at open, for the whole stream: when it falls, the reactor goroutine
// fails the stream with ErrTimeout, which ends the attempt or the backoff in progress.

// resubState is a stream's Resubscribe, resolved, and the receiver's state of it.
type resubState struct {
	// Set at open, read-only after.
	codes        map[codes.Code]bool
	backoffCurve // the delays' curve, as Config.Backoff's
	maxAttempts  int
	carrier      callcore.Call // the reopen carrier: Target the stream's reopen target

	resumed chan resumeReq // capacity 1: Reopen's request, from the Tick goroutine
	backoff chan struct{}  // capacity 1: the backoff is over, from the reactor goroutine

	// The receiver's.
	inARow int        // reopenings since the last attempt that received a message
	peer   *peer.Peer // the current attempt's, once it is a reopening
}

// resumeReq is what Reopen hands the receiver: the next request (nil: the first one), or why
// there is none.
type resumeReq struct {
	req proto.Message
	why string
}

// resolveResubscribe checks a stream's Resubscribe, with its defaults, and returns its state;
// nil if rs is nil.
func resolveResubscribe(ops *callcore.Ops, rs *calls.Resubscribe) (*resubState, *calls.Error) {
	if rs == nil {
		return nil, nil
	}
	bad := func(field string, v any, rule string) *calls.Error {
		return localError(callerr.InvalidArgument, ops.Path, fmt.Sprintf("%s %v %s", field, v, rule), nil)
	}
	const prefix = "StreamOptions.Resubscribe."
	st := &resubState{
		codes:        make(map[codes.Code]bool, max(len(rs.Codes), 1)),
		backoffCurve: backoffCurve{base: rs.BaseDelay, most: rs.MaxDelay, mult: rs.Multiplier, jitter: rs.Jitter},
		maxAttempts:  rs.MaxAttempts,
		resumed:      make(chan resumeReq, 1),
		backoff:      make(chan struct{}, 1),
	}
	for _, c := range rs.Codes {
		if c == codes.OK || c == codes.Canceled {
			return nil, bad(prefix+"Codes", rs.Codes, "must not hold OK or Canceled: a stream that ended OK is over, and Canceled is the client's own")
		}
		st.codes[c] = true
	}
	if len(rs.Codes) == 0 {
		st.codes[codes.Unavailable] = true
	}
	if field, v, rule := st.resolve(prefix); field != "" {
		return nil, bad(field, v, rule)
	}
	if rs.MaxAttempts < 0 {
		return nil, bad(prefix+"MaxAttempts", rs.MaxAttempts, "must not be negative (0 means no bound)")
	}
	return st, nil
}

// delay returns the backoff before the reopening counted in inARow: BaseDelay for the first
// in a row, ×Multiplier for each one after, at most MaxDelay, randomised by ±Jitter.
func (st *resubState) delay() time.Duration {
	d := float64(st.base)
	for i := 1; i < st.inARow && d < float64(st.most); i++ {
		d *= st.mult
	}
	d = min(d, float64(st.most))
	if st.jitter > 0 {
		d *= 1 + st.jitter*(2*rand.Float64()-1)
	}
	return time.Duration(d)
}

// reopens reports whether the attempt that ended with err, which received a message or not,
// is followed by a reopening, and counts it if so: Resubscribe is on, err is a status in its
// Codes, nothing stopped or failed the stream, and MaxAttempts is not spent. Receiver only.
func (s *stream) reopens(err error, received bool) bool {
	st := s.resub
	if st == nil || err == nil || s.ctx.Err() != nil {
		return false
	}
	if _, own := err.(*calls.Error); own { // prpc's own: a request that did not encode
		return false
	}
	if !st.codes[status.Code(err)] {
		return false
	}
	if received {
		st.inARow = 0
	}
	if st.maxAttempts > 0 && st.inARow >= st.maxAttempts {
		return false
	}
	st.inARow++
	return true
}

// awaitReopen pushes the reopen carrier, after the attempt's last message, schedules the
// backoff, and waits for Resume's request and the backoff's end; it reports whether the
// stream is to be reopened, with s.req and the attempt's peer ready for it. It reports false
// if the stream was stopped or failed meanwhile, or its end decided (Close abandoned the
// receiver), or Resume gave no request (the stream then fails with ErrInvalidArgument).
// Receiver only.
func (s *stream) awaitReopen() bool {
	st := s.resub
	s.mu.Lock()
	if s.ended || s.stopped.Load() {
		s.mu.Unlock()
		return false
	}
	st.carrier.Submitted = s.r.now()
	s.r.out.Push(&st.carrier)
	s.mu.Unlock()
	s.r.wakeHost()
	s.r.dueStreams.schedule(streamDue{at: s.r.now() + int64(st.delay()), s: s, backoff: true})
	var next resumeReq
	resumed, over := false, mutation == "stream-no-backoff"
	for !resumed || !over {
		select {
		case next = <-st.resumed:
			resumed = true
			if next.why != "" {
				s.fail(localError(callerr.InvalidArgument, s.ops.Path, next.why, nil))
				return false
			}
		case <-st.backoff:
			over = true
		case <-s.ctx.Done():
			return false
		}
	}
	if s.ctx.Err() != nil {
		return false
	}
	if next.req != nil {
		s.req = next.req
	}
	st.peer = new(peer.Peer)
	s.opts[len(s.opts)-1] = grpc.Peer(st.peer) // streamCallOptions puts the peer last
	s.reopened.Add(1)
	return true
}

// attemptPeer returns the peer gRPC fills in for the current attempt.
func (s *stream) attemptPeer() *peer.Peer {
	if s.resub != nil && s.resub.peer != nil {
		return s.resub.peer
	}
	return &s.peer
}

// Reopening implements callcore.StreamOwner, on the Tick goroutine: Resume runs only for a
// stream that was not stopped or failed since its receiver pushed the reopen carrier.
func (s *stream) Reopening() bool {
	return mutation == "stream-reopen-stopped" || !s.stopped.Load() && s.ctx.Err() == nil
}

// Reopen implements callcore.StreamOwner, on the Tick goroutine: it hands the receiver the
// request of its next attempt. The receiver pushes one reopen carrier per reopening and waits
// for its request before the next, so resumed has room.
func (s *stream) Reopen(req proto.Message, why string) {
	select {
	case s.resub.resumed <- resumeReq{req: req, why: why}:
	default:
	}
}

// backoffOver tells the receiver that its backoff is over, on the reactor goroutine.
func (s *stream) backoffOver() {
	select {
	case s.resub.backoff <- struct{}{}:
	default:
	}
}

// timeOut fails the stream with ErrTimeout, on the reactor goroutine, once
// StreamOptions.Timeout has passed, unless it ended first.
func (s *stream) timeOut() {
	s.failWith(localError(callerr.Timeout, s.ops.Path, fmt.Sprintf("StreamOptions.Timeout, %v, exceeded", s.timeout), nil), context.DeadlineExceeded)
}

// isEnded reports whether the stream's end is decided, for the schedule, which then forgets
// its due times.
func (s *stream) isEnded() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ended
}

// receivedSince reports whether the receiver pushed a message since it had pushed n.
func (s *stream) receivedSince(n uint64) bool { return s.received.Load() != n }
