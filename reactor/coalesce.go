package reactor

import (
	"context"
	"encoding/binary"
	"slices"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/encode"
	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/internal/limitcheck"
)

// The lane's side of a flight's start (the flight is in flight.go, its runner in
// flightrun.go): a lane that claims a call of a coalesced or hedged method computes its key,
// off the host goroutine — the method, WaitForReady, the outgoing metadata in canonical order
// and the request's deterministic encoding, so that map fields in any order coalesce — then
// joins the call to a flight with that key, or starts one. Call and Go cost the host nothing
// more for such a method.

// flown reports whether c, a call of method m the lane has claimed, runs as a flight: its
// method's policy coalesces or hedges its calls, and it has no call options, which could be
// neither compared nor replayed.
func flown(c *callcore.Call, m *methodEntry) bool {
	p := &m.policy
	return (p.coalesceMax > 0 || p.hedge != nil) && (c.Extra == nil || len(c.Extra.CallOpts) == 0)
}

// join joins w's call of method m, which the lane has claimed at now, to a flight with its key
// that it may join (a coalesced method's), or starts one and returns it for the lane to run.
// It returns nil when the call joined a flight, failed (its request did not encode, or was
// modified), was shed rather than start a flight it could not see through (shed.go), or was
// cut by the reactor meanwhile; the lane then goes on to its next call.
func (l *laneState) join(w callqueue.Work, m *methodEntry, now int64) *flight {
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
	limit := m.policy.coalesceMax // 0 for a method that is hedged only: nothing to join
	t := r.flights
	t.mu.Lock()
	f := t.joinable(l.keyBuf, now, limit)
	if f == nil {
		// A flight of its own, made outside the table's lock; then, if another lane has
		// started one meanwhile that the call may join, it joins that one instead.
		t.mu.Unlock()
		if err := shedError(c, m, now); err != nil {
			l.failClaimed(w, now, err)
			return nil
		}
		own := r.newFlight(c, m, w.Critical, string(l.keyBuf), prefix, now)
		t.mu.Lock()
		if f = t.joinable(l.keyBuf, now, limit); f == nil {
			started := own.add(c, w.Gen)
			if started {
				t.start(own)
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
	l.load.Add(-1) // the lane is free: the flight it joined runs on other lanes
	return nil
}

// newFlight returns a flight for c, a call of method m the lane has claimed at now (critical
// as the ready queue's entry says), whose key is key, the request's encoding starting at
// prefix: its request is a copy of c's, its context carries the values of c's parent context
// and c's deadline rounded up (roundDeadline). A hedged method's flight adds its share to the
// method's hedging budget.
func (r *Reactor) newFlight(c *callcore.Call, m *methodEntry, critical bool, key string, prefix int, now int64) *flight {
	f := &flight{t: r.flights, key: key, ops: c.Ops, waitForReady: c.WaitForReady, critical: critical,
		born: now, maxAge: m.policy.coalesceMaxAge, coalesced: m.policy.coalesceMax > 0}
	f.deadline = roundDeadline(c.Deadline)
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

// roundDeadline returns deadline rounded up to flightTick, the resolution of a flight's
// deadline.
func roundDeadline(deadline int64) int64 {
	return (deadline + flightTick - 1) / flightTick * flightTick
}

// flightTick is the resolution of a flight's deadline, in nanoseconds: the deadline of the
// call that starts a flight is rounded up to it. The calls of one burst are submitted
// microseconds apart, so that their deadlines, exact to the nanosecond, differ: rounding lets
// the transport call serve all of them to their deadlines, where the burst's later calls
// would otherwise need a resend once the first call's deadline passed. The server may then
// work up to this much longer for the first call than its own deadline: the reactor still
// times out each call at its own deadline.
const flightTick = int64(time.Millisecond)

// takeLead returns the flight the lane started in its last start, if any, and forgets it.
func (l *laneState) takeLead() *flight {
	f := l.lead
	l.lead = nil
	return f
}

// settleAlone settles w's call, claimed to run as a flight, that failed before it joined a
// flight: its request did not encode (encodeErr) or was modified (err). If the reactor cut it
// meanwhile, the lane reports that it has finished with it instead.
func (l *laneState) settleAlone(w callqueue.Work, err, encodeErr error) {
	l.failClaimed(w, l.r.now(), l.r.laneError(w.C, err, nil, encodeErr, false))
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
