package reactor

import (
	"context"
	"encoding/binary"
	"slices"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/encode"
	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/internal/limitcheck"
)

// The lane's side of coalescing (MethodPolicy.Coalesce; the flight is in flight.go). A lane
// that claims a call of a coalesced method computes its key there, off the host goroutine:
// the method, WaitForReady, the outgoing metadata in canonical order and the request's
// deterministic encoding, so that map fields in any order coalesce. Call and Go cost the host
// nothing more for a coalesced method.

// flown reports whether c, a call the lane has claimed, runs as a flight: its method's
// policy coalesces or hedges its calls, and it has no call options, which could be neither
// compared nor replayed.
func (l *laneState) flown(c *callcore.Call) bool {
	p := &l.r.method(c.Ops).policy
	return (p.coalesceMax > 0 || p.hedge != nil) && (c.Extra == nil || len(c.Extra.CallOpts) == 0)
}

// join joins w's call, which the lane has claimed, to a flight with its key that it may join
// (a coalesced method's), or starts one and returns it for the lane to run. It returns nil
// when the call joined a flight, failed (its request did not encode, or was modified), or was
// cut by the reactor meanwhile; the lane then goes on to its next call.
func (l *laneState) join(w callqueue.Work) *flight {
	r, c := l.r, w.C
	if r.owned != nil {
		if err := l.checkRequest(c); err != nil {
			l.settleAlone(w, err, nil)
			return nil
		}
	}
	prefix, err := l.coalesceKey(c)
	if err != nil {
		l.settleAlone(w, err, err)
		return nil
	}
	m := r.method(c.Ops)
	limit := m.policy.coalesceMax // 0 for a method that is hedged only: nothing to join
	t := r.flights
	t.mu.Lock()
	f := t.joinable(l.keyBuf, c.Deadline, limit)
	if f == nil {
		// A flight of its own, made outside the table's lock; then, if another lane has
		// started one meanwhile that the call may join, it joins that one instead.
		t.mu.Unlock()
		own := r.newFlight(c, m, w.Critical, string(l.keyBuf), prefix)
		t.mu.Lock()
		if f = t.joinable(l.keyBuf, c.Deadline, limit); f == nil {
			started := own.add(c, w.Gen)
			if started {
				t.start(own, limit > 0)
			}
			t.mu.Unlock()
			if !started {
				l.reportCut(c)
				return nil
			}
			return own
		}
	}
	joined := f.add(c, w.Gen)
	t.mu.Unlock()
	if !joined {
		l.reportCut(c)
		return nil
	}
	m.counters.coalesced.Add(1)
	l.load.Add(-1) // the lane is free: the flight's lane holds the transport call
	return nil
}

// newFlight returns a flight for c, a call of method m the lane has claimed (critical as the
// ready queue's entry says), whose key is key,
// the request's encoding starting at prefix: its request is a copy of c's, its context carries
// the values of c's parent context and c's deadline rounded up to the millisecond (flightTick),
// so that the calls submitted within the same millisecond with the same timeout may join it.
// A hedged method's flight adds its share to the method's hedging budget.
func (r *Reactor) newFlight(c *callcore.Call, m *methodEntry, critical bool, key string, prefix int) *flight {
	f := &flight{t: r.flights, key: key, ops: c.Ops, waitForReady: c.WaitForReady, critical: critical}
	f.deadline = (c.Deadline + flightTick - 1) / flightTick * flightTick
	f.req = lanecodec.Encoded{Message: proto.Clone(c.Req), Bytes: []byte(key[prefix:])}
	f.parent = r.transportParent(c, true)
	if m.hedge != nil {
		r.flights.mu.Lock()
		f.hedge = newHedging(m.hedge)
		r.flights.mu.Unlock()
	}
	f.ctx = f.attemptCtx(1)
	f.running = []*callCtx{f.ctx}
	return f
}

// flightTick is the resolution of a flight's deadline, in nanoseconds: a call's deadline
// rounded up to it. Calls of one burst are submitted microseconds apart, so that their
// deadlines, exact to the nanosecond, differ: a call may join a flight whose deadline is at
// least its own, and rounding lets the calls of one burst share one. The server may then
// work up to this much longer for the first call than its own deadline: the reactor still
// times out each call at its own deadline.
const flightTick = int64(time.Millisecond)

// takeLead returns the flight the lane started in its last start, if any, and forgets it.
func (l *laneState) takeLead() *flight {
	f := l.lead
	l.lead = nil
	return f
}

// runFlight runs the attempts of f that fall to the lane, starting with the one whose context
// is ctx (f.ctx, the first, for the lane that started f; a hedge for a lane that took one from
// the ready queue), and settles f's members once one of them decides it. An attempt sends f's
// own request with f's own context, and always asks for the header and trailer, since any
// member may have asked for them.
func (l *laneState) runFlight(f *flight, ctx *callCtx) {
	for ctx != nil {
		began := l.beginAttempt(f, ctx)
		value, err := l.r.invokeWith(ctx, f.ops, &f.req, nil, f.waitForReady, l.withMetadata)
		ctx = l.finishAttempt(f, ctx, began, value, err)
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
// or err: it settles f's members if the attempt decides f, and returns the context of the
// attempt the lane is to run next, if any (a hedge after a non-fatal code).
func (l *laneState) finishAttempt(f *flight, ctx *callCtx, began int64, value proto.Message, err error) *callCtx {
	r := l.r
	if err != nil {
		l.codec.Forget()
	}
	r.backends.record(&l.backend, l.peer.Addr, ctx.pick.Addr, err)
	if r.limited {
		// The attempt holds the lane's place under the limit; one that every member left was
		// cancelled (Canceled: neutral), or cut at its deadline (a drop).
		l.slot.Signal = limitSignal(err, false, nil, true)
	}
	if f.hedge != nil && err == nil {
		r.flights.sampleLatency(f, time.Duration(r.now()-began))
	}
	members, next, leaveLoad := f.t.endAttempt(f, ctx, err)
	if next == nil {
		l.settleMembers(f, members, value, err)
		if leaveLoad {
			l.load.Add(-1)
		}
	}
	return next
}

// scheduleHedge schedules attempt n of f, hedged, after its delay.
func (l *laneState) scheduleHedge(f *flight, n int) {
	t := f.t
	t.mu.Lock()
	d, ok := f.hedge.delay()
	t.mu.Unlock()
	if ok {
		l.r.hedger.schedule(f, n, d)
	}
}

// settleMembers settles members, f's members still joined when the lane's attempt decided
// it, with that attempt's result: each gets its own response message (the first the
// decoded one, the others a copy), its own error, and its own copies of the header and trailer
// if it asked for them. A member the reactor settled, or whose record moved on, is skipped.
func (l *laneState) settleMembers(f *flight, members []flightMember, value proto.Message, err error) {
	r := l.r
	// A hedged call that made several attempts may have been sent by any of them. f is
	// decided: no attempt starts any more.
	streamed := l.peer.Addr != nil || f.hedge != nil && f.hedge.started > 1
	shared := false // value has gone to a member
	for _, m := range members {
		c := m.c
		if !c.Move(m.gen, callcore.Joined, callcore.Completed) {
			continue
		}
		var header, trailer metadata.MD
		if c.Metadata {
			header, trailer = r.keepMetadata(c, "header", l.header.Copy()), r.keepMetadata(c, "trailer", l.trailer.Copy())
		}
		if err != nil {
			r.settleCompleted(c, nil, r.laneError(c, err, trailer, nil, streamed), header, trailer)
		} else {
			v := value
			if shared && mutation != "coalesce-share-response" {
				v = proto.Clone(value)
			}
			shared = true
			r.settleCompleted(c, v, nil, header, trailer)
		}
		r.settledByLane()
	}
}

// settleAlone settles w's call, claimed for coalescing, that failed before it joined a
// flight: its request did not encode (encodeErr) or was modified (err). If the reactor cut it
// meanwhile, the lane reports that it has finished with it instead.
func (l *laneState) settleAlone(w callqueue.Work, err, encodeErr error) {
	r, c := l.r, w.C
	e := r.laneError(c, err, nil, encodeErr, false)
	if !c.Move(w.Gen, callcore.Running, callcore.Completed) {
		l.reportCut(c)
		return
	}
	r.settleCompleted(c, nil, e, nil, nil)
	l.load.Add(-1)
	r.settledByLane()
}

// coalesceKey writes the coalescing key of c into the lane's keyBuf and returns where the
// request's encoding starts in it, or the error of encoding the request: a *SizeError over
// MaxRequestBytes, or the encoder's.
func (l *laneState) coalesceKey(c *callcore.Call) (prefix int, err error) {
	b := append(l.keyBuf[:0], c.Ops.Path...)
	if c.WaitForReady {
		b = append(b, 0, 1)
	} else {
		b = append(b, 0, 0)
	}
	if c.Extra != nil {
		b = appendMetadata(b, c.Extra.MD)
	}
	prefix = len(b)
	out, err := snapshotOptions.MarshalAppend(b, c.Req)
	if err == nil {
		b = out
		if limit := l.r.cfg.Limits; limit.MaxRequestBytes > 0 {
			err = limitcheck.CheckRequest(limit, len(b)-prefix)
		}
	}
	if cap(b) <= encode.MaxKeptBuffer {
		l.keyBuf = b
	} else {
		l.keyBuf = nil
	}
	return prefix, err
}

// appendMetadata appends md to b in a canonical form: its keys in order, each with its values
// in theirs, every string and count length-prefixed, so that two metadata append the same
// bytes exactly when they hold the same keys and values.
func appendMetadata(b []byte, md metadata.MD) []byte {
	b = binary.AppendUvarint(b, uint64(len(md)))
	if len(md) == 0 {
		return b
	}
	keys := make([]string, 0, len(md))
	for k := range md {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		vs := md[k]
		b = binary.AppendUvarint(b, uint64(len(vs)))
		for _, v := range vs {
			b = binary.AppendUvarint(b, uint64(len(v)))
			b = append(b, v...)
		}
	}
	return b
}

// flightParent returns the parent of a flight's transport context: parent's values without
// its deadline or cancellation, which settle the first member alone.
func flightParent(parent context.Context) context.Context {
	if parent == nil {
		return nil
	}
	return context.WithoutCancel(parent)
}
