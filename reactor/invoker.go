package reactor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/dial"
	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/internal/standin"
)

// lane is one of invoker inv's BatchSize goroutines: it takes the next admitted call from the
// ready queue as soon as its previous one returns, claims it, runs it with ClientConn.Invoke,
// the cheapest call path in grpc-go (no extra goroutine per call, unary interceptors run), and
// settles it with the result, unless the reactor settled it first. A call of a coalesced or
// hedged method runs as a flight instead (flight.go), and an entry that stands for a hedge runs
// the next attempt of its flight (hedge.go). Its codec encodes each request inside gRPC's call,
// into a buffer the lane reuses. With Config.AdaptiveLimit, each take gives back the place
// under the limit of the lane's previous call, with what that call said about the backend
// (finish, or finishAttempt for a flight's attempt), and waits for a place for the next.
func (r *Reactor) lane(inv int) {
	defer func() { r.laneExit <- struct{}{} }()
	l := r.newLane(inv)
	for {
		w, ok := r.work.Take(&l.slot)
		if !ok {
			return
		}
		if w.Attempt { // another attempt of a hedged call (hedge.go)
			if f, ctx := r.flights.beginHedge(w.C); ctx != nil {
				l.load.Add(1)
				l.runFlight(f, ctx)
			}
			continue
		}
		ctx := l.start(w)
		if ctx == nil {
			// The reactor settled it while it waited, or it runs as a flight: the lane has
			// joined it to one, or started one, which it runs now.
			if f := l.takeLead(); f != nil {
				l.runFlight(f, f.ctx)
			}
			continue
		}
		var value proto.Message
		var err error
		if r.owned != nil {
			err = l.checkRequest(w.C)
		}
		if err == nil {
			value, err = r.invoke(w.C, ctx, l.options(w.C))
		}
		l.finish(w, ctx, value, err)
	}
}

// laneState is what one lane keeps from one call to the next.
type laneState struct {
	r               *Reactor
	inv             int
	load            *atomic.Int32
	codec           *lanecodec.Codec
	header, trailer metadata.MD
	peer            peer.Peer
	// The call options: the peer is always asked for, for Stats' per-backend counts; the
	// header and trailer unless the method's policy says nobody reads them.
	bare, withMetadata []grpc.CallOption
	checkBuf           []byte       // with Config.CheckRequestOwnership, for checkRequest
	backend            backendCache // the backend of the lane's last transport call
	keyBuf             []byte       // the key of the last call run as a flight (coalesce.go)
	lead               *flight      // the flight the lane started and has yet to run, if any
	method             *methodEntry // the method of the lane's last call (methodOf)
	shedErr            error        // with the mutation shed-sent only
	// slot is the lane's place under Config.AdaptiveLimit, and what its call said about the
	// backend, which its next take gives back; the ready queue ignores it without the limit.
	slot callqueue.Slot
}

func (r *Reactor) newLane(inv int) *laneState {
	l := &laneState{r: r, inv: inv, load: &r.loads[inv].Int32, codec: lanecodec.New(r.cfg.Limits)}
	l.bare = append(append([]grpc.CallOption{grpc.ForceCodecV2(l.codec)}, r.baseOpts...), grpc.Peer(&l.peer))
	l.withMetadata = append(append([]grpc.CallOption(nil), l.bare...), grpc.Header(&l.header), grpc.Trailer(&l.trailer))
	return l
}

// start claims w's call for the lane and returns its transport context, or nil if the reactor
// settled it first, if the lane shed it (shed.go), or if the call runs as a flight (flown):
// then the lane has joined it to a flight, or failed it, and set lead if the flight is its to
// run (takeLead). A call the lane does not run itself leaves the lane's place under the limit
// to go back with the next take, Neutral: it says nothing about the backend.
func (l *laneState) start(w callqueue.Work) *callCtx {
	r, c := l.r, w.C
	now, ok := r.claim(c, w.Gen, l.load)
	if !ok {
		if mutation == "limit-leak" {
			l.slot = callqueue.Slot{} // the bug: the lane forgets its place, never given back
		}
		return nil
	}
	m := l.methodOf(c.Ops)
	if r.flights != nil && flown(c, m) {
		l.lead = l.join(w, m, now)
		return nil
	}
	if err := shedError(c, m, now); err != nil {
		if mutation != "shed-sent" {
			l.failClaimed(w, now, err)
			return nil
		}
		l.shedErr = err // the bug: the lane sends the call, then fails it as shed
	}
	l.header, l.trailer, l.peer = nil, nil, peer.Peer{}
	ctx := r.transportCtx(c)
	if err := c.SetCancel(&ctx.State); err != nil { // cut meanwhile
		ctx.End(err)
	}
	return ctx
}

// options returns the call options of c's transport call.
func (l *laneState) options(c *callcore.Call) []grpc.CallOption {
	if c.Metadata {
		return l.withMetadata
	}
	return l.bare
}

// finish settles w's call, which the lane started, with the transport call's result, unless
// the reactor cut it meanwhile: then it reports that the lane has finished with it. With the
// adaptive limit, it records what the call said about the backend in the lane's slot
// (limitSignal, answered), from the transport's own error and time.
func (l *laneState) finish(w callqueue.Work, ctx *callCtx, value proto.Message, err error) {
	r, c := l.r, w.C
	transportErr, encoded := err, true
	header, trailer := r.keepMetadata(c, "header", l.header), r.keepMetadata(c, "trailer", l.trailer)
	if err != nil {
		encodeErr := l.codec.Err()
		encoded = encodeErr == nil
		err = r.laneError(c, err, trailer, encodeErr, l.peer.Addr != nil)
		// The codec forgets this call's encoding error, so that a call failing before gRPC
		// asks for its request does not report it; and since a failed call may return
		// before gRPC has written the request, the buffer handed over goes with it.
		l.codec.Forget()
	}
	r.backends.record(&l.backend, l.peer.Addr, ctx.pick.Addr, err, false)
	if mutation == "shed-sent" && l.shedErr != nil {
		value, err, l.shedErr = nil, l.shedErr, nil // the bug: a call sent, then failed as shed
	}
	if !c.Move(w.Gen, callcore.Running, callcore.Completed) {
		if r.limited {
			l.slot.Signal = limitSignal(transportErr, true, ctx.Err(), encoded)
		}
		l.reportCut(c)
		return
	}
	if r.limited {
		l.slot.Signal = limitSignal(transportErr, false, nil, encoded)
	}
	now := r.now()
	if err == nil {
		claimed := c.At(c.Claimed)
		l.answered(l.methodOf(c.Ops), now, time.Duration(now-claimed), time.Duration(c.Deadline-claimed))
	}
	l.settleClaimed(c, now, value, err, header, trailer)
}

// settleClaimed settles c, which the lane claimed and has just moved to Completed, with value
// or err at now, and takes it off the lane's load: the tail of every settlement of a call the
// lane ran or failed alone (a flight's members leave the load with their flight).
func (l *laneState) settleClaimed(c *callcore.Call, now int64, value proto.Message, err error, header, trailer metadata.MD) {
	l.r.settleCompleted(c, now, value, err, header, trailer)
	l.load.Add(-1)
	l.r.settledByLane()
}

// failClaimed fails w's call, which the lane claimed at now and did not send, with err, unless
// the reactor cut it meanwhile: then it reports that the lane has finished with it.
func (l *laneState) failClaimed(w callqueue.Work, now int64, err error) {
	if !w.C.Move(w.Gen, callcore.Running, callcore.Completed) {
		l.reportCut(w.C)
		return
	}
	l.settleClaimed(w.C, now, nil, err, nil, nil)
}

// reportCut reports that the lane has finished with c, which the reactor cut while the lane
// ran it (Running). The reactor recorded its outcome; it queues the call for Tick, and takes
// it off the gauges, once it has this report. If Close gave up on the lane (a hook of the host
// held it past Close's context and laneGrace), the report is refused: the call was delivered
// without it, through a record of its own, and nothing writes c any more.
func (l *laneState) reportCut(c *callcore.Call) {
	l.r.in.Complete(callqueue.Completion{C: c, Inv: int32(l.inv)})
}

// settledByLane accounts for a call a lane has settled: it leaves InFlight, and the reactor
// goroutine prunes the deadline heap of the calls lanes settled when it next runs: a lane
// wakes it once all are settled (Close may be waiting for that) and every
// callqueue.CompactAfter settlements, so that settled calls do not stay referenced for long.
func (r *Reactor) settledByLane() {
	r.inFlight.Add(-1)
	if left := r.deadlines.SettledByLane(); left%callqueue.CompactAfter == 0 {
		r.in.Signal()
	}
}

// settleCompleted records the outcome of c, which the calling lane completed at now, and
// queues it for Tick.
func (r *Reactor) settleCompleted(c *callcore.Call, now int64, value proto.Message, err error, header, trailer metadata.MD) {
	c.StopParentWatch()
	c.Value, c.Err, c.Header, c.Trailer = value, err, header, trailer
	if err != nil {
		c.Reason = reasonOf(err)
	}
	c.Settled = c.Since(now) // the end of Stats.Transport's phase, the start of TickWait's
	r.out.Push(c)
	r.wakeHost()
}

// claim moves use gen of record c from Unclaimed to Running, unless the reactor dropped it
// first or the record has moved on, and reports whether it did, and when. The record is read
// only once claimed: until then it may be freed and reused. A claimed call moves from the
// Queued gauge to InFlight and its invoker's load. The claim's time ends the call's
// Stats.QueueWait.
func (r *Reactor) claim(c *callcore.Call, gen uint32, load *atomic.Int32) (now int64, ok bool) {
	if !c.Move(gen, callcore.Unclaimed, callcore.Running) {
		return 0, false
	}
	now = r.now()
	c.Claimed = c.Since(now)
	load.Add(1)
	r.inFlight.Add(1)
	r.queued.Add(-1)
	return now, true
}

// transportCtx returns the context of c's transport call, c being a call its lane has claimed:
// c's deadline, parent context and request metadata. Its done state is for the caller to
// publish.
func (r *Reactor) transportCtx(c *callcore.Call) *callCtx {
	return r.deadlineCtx(r.transportParent(c, false), c.Deadline)
}

// transportParent returns the parent of c's transport context: c's parent context with c's
// request metadata; for a flight (forFlight), with only the values of c's parent context
// (flightParent). The request metadata is a value of the parent, so that gRPC gets the call's
// own context, to which the contexts it derives attach without a goroutine.
func (r *Reactor) transportParent(c *callcore.Call, forFlight bool) context.Context {
	var parent context.Context
	if x := c.Extra; x != nil {
		parent = x.Parent
		if forFlight {
			parent = flightParent(parent)
		}
		if x.MD != nil {
			parent = metadata.NewOutgoingContext(orBackground(parent), x.MD)
		}
	}
	return parent
}

// deadlineCtx returns the context of a transport call with parent (nil for none) and
// deadlineAt, on the reactor's clock. With a clock other than the system's, the native
// deadline is the time left, from now on the system clock, and the parent carries the
// deadline on the reactor's clock (standin.WithDeadline), for a connection that runs handlers
// itself to time them out by.
func (r *Reactor) deadlineCtx(parent context.Context, deadlineAt int64) *callCtx {
	deadline := r.timeAt(deadlineAt)
	if !r.system {
		deadline = time.Now().Add(time.Duration(deadlineAt - r.now()))
		parent = standin.WithDeadline(orBackground(parent), standin.Deadline{Clock: r.clock, At: r.timeAt(deadlineAt)})
	}
	return newCallCtx(parent, deadline)
}

// invoke runs c's transport call and returns its response, or the transport's error.
func (r *Reactor) invoke(c *callcore.Call, callCtx *callCtx, opts []grpc.CallOption) (value proto.Message, err error) {
	var userOpts []grpc.CallOption
	if x := c.Extra; x != nil {
		userOpts = x.CallOpts
	}
	return r.invokeWith(callCtx, c.Ops, c.Req, userOpts, c.WaitForReady, opts)
}

// invokeWith runs a transport call of ops's method with req and returns its response, or the
// transport's error. A panic fails only this transport call, with Internal.
func (r *Reactor) invokeWith(callCtx *callCtx, ops *callcore.Ops, req any, userOpts []grpc.CallOption, waitForReady bool, opts []grpc.CallOption) (value proto.Message, err error) {
	defer func() {
		if p := recover(); p != nil {
			r.cfg.Logger.Error("prpc: invoker panicked", "method", ops.Path, "panic", p, "stack", string(debug.Stack()))
			value, err = nil, status.Error(codes.Internal, fmt.Sprintf("prpc: invoker panicked: %v", p))
		}
	}()
	resp := ops.NewResponse()
	if len(userOpts) > 0 || waitForReady {
		// User options first: for the limits, the last option wins.
		own := make([]grpc.CallOption, 0, len(userOpts)+1+len(opts))
		own = append(own, userOpts...)
		if waitForReady {
			own = append(own, grpc.WaitForReady(true))
		}
		opts = append(own, opts...)
	}
	if err = r.conn.Invoke(callCtx, ops.Path, req, resp, opts...); err != nil {
		return nil, err
	}
	return resp, nil
}

// keepMetadata returns md, the response header or trailer (what) of c, if its size counted as
// limitcheck.MetadataSize counts it is within MaxMetadataBytes. A larger one is dropped whole: it
// returns an empty MD and logs a warning naming the method, the block and the sizes, never the
// values. A nil md stays nil. It costs one pass over md's keys and values.
func (r *Reactor) keepMetadata(c *callcore.Call, what string, md metadata.MD) metadata.MD {
	return r.keepMetadataOf(c.Ops.Path, what, md)
}

// keepMetadataOf is keepMetadata for a call or stream of the method at path.
func (r *Reactor) keepMetadataOf(path, what string, md metadata.MD) metadata.MD {
	if len(md) == 0 {
		return md
	}
	size, limit := limitcheck.MetadataSize(md), r.cfg.Limits.MaxMetadataBytes
	if size <= limit {
		return md
	}
	r.cfg.Logger.Warn("prpc: response metadata over Limits.MaxMetadataBytes dropped",
		"method", path, "block", what, "bytes", size, "limit", limit)
	return metadata.MD{}
}

// laneError turns the error of a transport call into the call's *calls.Error. A request that
// the lane's codec could not send (encodeErr) fails with ErrTooLarge or ErrInvalidArgument; one
// that the lane's ownership check found modified (errRequestModified), with ErrInvalidArgument.
// A call whose parent context was cancelled fails with ErrCancelled, or with ErrTimeout if the
// parent's deadline passed (it applies to the call). An Unavailable call failed by a recorded
// handshake failure gets it as its cause (a *calls.HandshakeError); one that a plaintext
// connection failed before the server's HTTP/2 preface says the server may require TLS. The
// error is marked NotSent if the request was never encoded, or if gRPC never gave the call a
// stream (streamed is false) where that tells (unsentKnown).
func (r *Reactor) laneError(c *callcore.Call, err error, trailer metadata.MD, encodeErr error, streamed bool) *calls.Error {
	e := r.transportError(c, err, trailer, encodeErr)
	if encodeErr != nil || err == errRequestModified || !streamed && r.unsentKnown(c) {
		markNotSent(e)
	}
	return e
}

// unsentKnown reports whether a call of c's method that gRPC never gave a stream to a backend
// was never sent: on a connection prpc dialled with the service config it generates, where
// gRPC retries only idempotent methods, a call of any other method makes one attempt, or
// transparent retries of attempts no server processed, and gRPC reports the stream of the
// last (grpc.Peer). A resolver that supplies the service config (xDS) may retry any method,
// as the route's retry policy says.
func (r *Reactor) unsentKnown(c *callcore.Call) bool {
	return r.cc != nil && r.cfg.ServiceConfig == "" && !r.cfg.ServiceConfigLookup &&
		r.ownScheme == "" && !r.method(c.Ops).policy.retried
}

// transportError is laneError but for NotSent.
func (r *Reactor) transportError(c *callcore.Call, err error, trailer metadata.MD, encodeErr error) *calls.Error {
	if err == errRequestModified { // the lane's check (ownership.go): never sent
		return localError(callerr.InvalidArgument, c.Ops.Path, msgRequestModified, nil)
	}
	if encodeErr != nil {
		var se *limitcheck.SizeError
		if errors.As(encodeErr, &se) {
			return localError(callerr.TooLarge, c.Ops.Path, encodeErr.Error(), nil)
		}
		return localError(callerr.InvalidArgument, c.Ops.Path, "encoding the request: "+encodeErr.Error(), encodeErr)
	}
	if parent := c.Parent(); parent != nil && status.Code(err) != codes.DeadlineExceeded {
		switch perr := parent.Err(); {
		case errors.Is(perr, context.DeadlineExceeded):
			return localError(callerr.Timeout, c.Ops.Path, "deadline of the parent context exceeded", perr)
		case perr != nil:
			return localError(callerr.Cancelled, c.Ops.Path, "parent context done: "+perr.Error(), perr)
		}
	}
	if he := r.handshakes.Cause(err); he != nil {
		return handshakeError(c.Ops.Path, err, trailer, he)
	}
	if r.handshakes.Plaintext() {
		err = dial.WithPlaintextHint(err)
	}
	requestBytes := 0
	if status.Code(err) == codes.ResourceExhausted { // a limit: ours, or the server's on the request
		requestBytes = proto.Size(c.Req)
	}
	return statusError(c.Ops.Path, err, trailer, r.cfg.Limits.MaxResponseBytes, requestBytes)
}

// orBackground returns ctx, or context.Background if it is nil.
func orBackground(ctx context.Context) context.Context {
	if ctx == nil {
		return context.Background()
	}
	return ctx
}
