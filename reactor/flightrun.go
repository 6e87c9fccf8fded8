package reactor

import (
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
)

// The flight runner: what a lane does with a flight (flight.go) it runs, whether it started the
// flight (coalesce.go), took one of its hedges from the ready queue (hedge.go) or goes on with
// a resend. Each attempt is begun (the next hedge scheduled, for a hedged flight), sent, and
// ended under the flight table's lock (endAttempt), which decides what follows: nothing, the
// next attempt at once, or the settlement of the members — and, for the members whose deadlines
// are later than the flight's once it has passed, a resend, whose first attempt the same lane
// runs next.

// runFlight runs the attempts of f that fall to the lane: the one whose context is ctx (f.ctx,
// the first, for the lane that started f; a hedge for a lane that took one from the ready
// queue), then each it sends at once after a non-fatal code; it settles f's members if one of
// these attempts decides f, and then, if some members go on in a resend, runs that flight's
// attempts the same way. An attempt sends f's own request with a context of its own
// (attemptCtx), and always asks for the header and trailer, since any member may have asked for
// them.
func (l *laneState) runFlight(f *flight, ctx *callCtx) {
	for ctx != nil {
		began := l.beginAttempt(f, ctx)
		value, err := l.r.invokeWith(ctx, f.ops, &f.req, nil, f.waitForReady, l.withMetadata)
		f, ctx = l.finishAttempt(f, ctx, began, value, err)
	}
}

// beginAttempt prepares the lane for the attempt of f with context ctx, schedules the next
// attempt if f is hedged, and returns the attempt's start on the reactor's clock.
func (l *laneState) beginAttempt(f *flight, ctx *callCtx) int64 {
	if f.hedge != nil && ctx.attempt < f.hedge.p.maxAttempts {
		l.scheduleHedge(f, ctx.attempt+1)
	}
	l.header, l.trailer, l.peer = nil, nil, peer.Peer{}
	return l.r.now()
}

// finishAttempt ends the attempt of f with context ctx, begun at began, that returned value
// or err: it settles f's members if the attempt decides f, and returns the flight and the
// context of the attempt the lane is to run next, if any: a hedge after a non-fatal code, or
// the first attempt of a resend for members whose deadlines are later than f's. An attempt
// that another attempt's answer cancelled counts for its backend as a hedge lost, not as a
// failed call.
func (l *laneState) finishAttempt(f *flight, ctx *callCtx, began int64, value proto.Message, err error) (*flight, *callCtx) {
	r := l.r
	if err != nil {
		l.codec.Forget()
	}
	if r.limited {
		// The attempt holds the lane's place under the limit; one that every member left was
		// cancelled (Canceled: neutral), or cut at its deadline (a drop).
		l.slot.Signal = limitSignal(err, false, nil, true)
	}
	now := r.now()
	if err == nil {
		l.answered(l.methodOf(f.ops), now, time.Duration(now-began), time.Duration(f.deadline-began))
		if f.hedge != nil {
			r.flights.sampleLatency(f, time.Duration(now-began))
		}
	}
	end := f.t.endAttempt(f, ctx, err, now)
	r.backends.record(&l.backend, l.peer.Addr, ctx.pick.Addr, err, end.lost)
	if end.lost { // after its backend's count: a reader that sees this one sees both
		l.methodOf(f.ops).counters.hedgesLost.Add(1)
	}
	if end.settle != nil {
		l.settleMembers(f, end.settle, value, err)
	}
	if end.leaveLoad {
		l.load.Add(-1)
	}
	return end.next, end.ctx
}

// settleMembers settles members, f's members when the lane's attempt decided it, with that
// attempt's result: each gets its own error, or its own response message, all of them made
// before the first member is settled (the decoded one and copies of it), since a member's
// callback may change its response as soon as Tick runs it; and its own copies of the header
// and trailer if it asked for them. A member the reactor settled, or whose record moved on, is
// skipped.
func (l *laneState) settleMembers(f *flight, members []flightMember, value proto.Message, err error) {
	r := l.r
	// A hedged call that made several attempts may have been sent by any of them. f is
	// decided: no attempt starts any more.
	streamed := l.peer.Addr != nil || f.hedge != nil && f.hedge.started > 1
	won := members[:0] // the members the lane settles, claimed before any is settled
	for _, m := range members {
		if m.c.Move(m.gen, callcore.Joined, callcore.Completed) {
			won = append(won, m)
		}
	}
	values := responses(value, len(won))
	now := r.now()
	for i, m := range won {
		c := m.c
		var header, trailer metadata.MD
		if c.Metadata {
			header, trailer = r.keepMetadata(c, "header", l.header.Copy()), r.keepMetadata(c, "trailer", l.trailer.Copy())
		}
		if err != nil {
			r.settleCompleted(c, now, nil, r.laneError(c, err, trailer, nil, streamed), header, trailer)
		} else {
			r.settleCompleted(c, now, values[i], nil, header, trailer)
		}
		r.settledByLane()
	}
}

// responses returns n response messages for the members of a flight, value and n−1 copies of
// it, all made before any member is settled; none if value is nil (the attempt failed).
func responses(value proto.Message, n int) []proto.Message {
	if value == nil || n == 0 {
		return nil
	}
	values := make([]proto.Message, n)
	for i := range n - 1 {
		values[i] = proto.Clone(value)
		if mutation == "coalesce-share-response" {
			values[i] = value // the bug: the members share one message
		}
	}
	values[n-1] = value
	return values
}
