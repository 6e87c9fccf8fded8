package reactor

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/testpb"
)

// Streams in the simulation. Unlike lanes, a stream's receiving goroutine is the real one
// (stream.run), started by Watch as in production: its waits — for a free place in its ring,
// for Resume's request and its backoff — are inside the core. Each seed runs in a
// testing/synctest bubble, and after every step the simulator waits (synctest.Wait) until
// every stream goroutine is durably blocked: in the simulated transport (simConn.NewStream,
// simClientStream.RecvMsg), whose answers only the simulator gives, one stream at a time, or
// in the core's own waits. So between steps nothing runs but the simulator, each step lets
// at most the goroutines it woke run to their next wait, and a seed's run stays the same from
// one run to the next. A step that wakes several receivers at once (CloseStreams, Close, a
// turn that times several out) lets them push their ends in an order of the scheduler's: the
// simulated game draws nothing and spends no time in stream callbacks, so that order changes
// nothing else.

// simWatch is the simulation's server-streaming method.
var simWatch = calls.MustStreamMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpcsim.Sim/Watch")

// simMaxStreams bounds the Watch streams a seed opens, and simMaxBidis its Bidi streams, so
// that streams cost the 100,000-seed run little.
const (
	simMaxStreams = 8
	simMaxBidis   = 4
)

// simStreamEvery is how often a seed opens streams: seeds 1, 1+simStreamEvery, … do (the
// others run as before streams existed, outside a synctest bubble), since a seed with streams
// costs the simulator several times one without.
const simStreamEvery = 4

// seedHasStreams reports whether seed's game opens streams.
func seedHasStreams(seed uint64) bool { return seed%simStreamEvery == 1 }

// simStreamKey is the context key under which a stream's options carry its simStream, for
// the simulated transport.
type simStreamKey struct{}

// simOp is what a stream goroutine waits for in the simulated transport.
type simOp struct {
	open bool // NewStream; else RecvMsg on cs
	ctx  context.Context
	cs   *simClientStream
}

// simReply is the simulator's answer to a simOp.
type simReply struct {
	cs  *simClientStream // NewStream's
	msg string           // RecvMsg's message, if err is nil
	err error
}

// simStream is one stream the simulated game opened, and what the simulator saw of it.
type simStream struct {
	id         int
	h          *calls.Stream[*testpb.EchoRequest, *testpb.EchoResponse]     // Watch's; nil for Bidi
	bh         *calls.BidiStream[*testpb.EchoRequest, *testpb.EchoResponse] // Bidi's; nil for Watch
	s          *stream                                                      // nil if refused at open
	maxWaiting int
	keepLatest bool
	resub      map[codes.Code]bool // Resubscribe's codes; nil: off
	base       time.Duration       // Resubscribe's BaseDelay
	timeoutAt  time.Duration       // on the simulated clock; 0: no timeout
	// held: a hook of the host (a stream interceptor ignoring its context) holds the
	// goroutine in the transport once the stream's context has ended, until Close gives up
	// on it.
	held bool

	ops     chan simOp    // capacity 1: what the receiver waits for
	reply   chan simReply // capacity 1
	pending *simOp        // read from ops, not answered yet

	// Bidi's sending side (sim_bidi_internal_test.go).
	bidiSide

	// The server.
	cs       *simClientStream // the current attempt's
	attempts int
	opens    int        // transport streams opened
	lastEnd  codes.Code // how the last attempt ended
	sent     int        // the newest message the server sent (messages are numbered from 1)

	// The backoffs.
	endedAt    time.Duration // when the last attempt ended, on the simulated clock
	sentInThis bool          // the server sent a message in the current attempt
	sentInLast bool          // the server sent a message in the last attempt that ended
	inARow     int           // reopenings since the last attempt in which the server sent a message

	// What the game saw and did.
	delivered int         // the newest message OnMessage got
	ends      int         // OnEnd runs
	endErr    error       // OnEnd's error
	stopped   bool        // the game cancelled it, or CloseStreams or Close stopped it
	first     error       // the first cause the simulator applied before the end was decided
	firstStop error       // the first stop the simulator applied, before or after the end was decided
	timedOut  bool        // its timeout fell before the end was decided
	decided   bool        // the simulator saw its end decided: nothing it does later is the first cause
	exited    bool        // its receiving goroutine returned
	finalCode *codes.Code // the server's code that decided the end, if it did
}

// simClientStream is one attempt's transport stream: a scripted server that sends a few
// messages, then ends with a code.
type simClientStream struct {
	st   *simStream
	ctx  context.Context
	req  *testpb.EchoRequest
	left int        // messages the server sends before it ends
	end  codes.Code // how it ends
	bidiServer
}

func (cs *simClientStream) Header() (metadata.MD, error) { return nil, nil }
func (cs *simClientStream) Trailer() metadata.MD         { return nil }
func (cs *simClientStream) Context() context.Context     { return cs.ctx }

// SendMsg takes Watch's request at once; a Bidi stream's messages wait for the simulator.
func (cs *simClientStream) SendMsg(m any) error {
	if cs.st.bh != nil {
		return cs.bidiSend(m.(*testpb.EchoRequest), false)
	}
	cs.req = m.(*testpb.EchoRequest)
	return nil
}

// CloseSend returns at once for Watch; a Bidi stream's waits for the simulator.
func (cs *simClientStream) CloseSend() error {
	if cs.st.bh != nil {
		return cs.bidiSend(nil, true)
	}
	return nil
}

// RecvMsg waits for the simulator's answer.
func (cs *simClientStream) RecvMsg(m any) error {
	cs.st.ops <- simOp{cs: cs}
	rep := <-cs.st.reply
	if rep.err != nil {
		return rep.err
	}
	m.(*testpb.EchoResponse).Message = rep.msg
	return nil
}

// newStream waits for the simulator to open the transport stream of the stream in ctx.
func simNewStream(ctx context.Context) (grpc.ClientStream, error) {
	st := ctx.Value(simStreamKey{}).(*simStream)
	st.ops <- simOp{open: true, ctx: ctx}
	rep := <-st.reply
	if rep.err != nil {
		return nil, rep.err
	}
	return rep.cs, nil
}

// openStream has the game open a Watch stream with drawn options.
func (w *simWorld) openStream() {
	w.streamsWoken = true
	st := &simStream{id: len(w.streams) + 1, ops: make(chan simOp, 1), reply: make(chan simReply, 1)}
	w.streams = append(w.streams, st)
	opts := &calls.StreamOptions{Context: context.WithValue(context.Background(), simStreamKey{}, st)}
	opts.MaxWaiting = 1 + w.rng.IntN(8)
	st.maxWaiting = opts.MaxWaiting
	if w.pct(25) {
		opts.KeepLatest, st.keepLatest, st.maxWaiting = true, true, 1
	}
	if w.pct(50) {
		rs := &calls.Resubscribe{Jitter: None, BaseDelay: time.Duration(1+w.rng.IntN(50)) * time.Millisecond}
		st.resub, st.base = map[codes.Code]bool{codes.Unavailable: true}, rs.BaseDelay
		if w.pct(50) {
			rs.Codes = []codes.Code{codes.Unavailable, codes.Internal}
			st.resub[codes.Internal] = true
		}
		opts.Resubscribe = rs
	}
	w.drawHeldAndTimeout(st, opts)
	h := calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{
		OnEnd: func(err error) { w.streamEnd(st, err) },
		Resume: func(last *testpb.EchoResponse) *testpb.EchoRequest {
			return w.streamResume(st, last)
		},
	}
	w.handleMessages(st, &h)
	st.h = Watch(w.r, simWatch, &testpb.EchoRequest{Message: "watch"}, opts, h)
	w.opened(st, (*callcore.Stream[*testpb.EchoRequest, *testpb.EchoResponse])(st.h))
	w.note("game opens stream %d (MaxWaiting %d, KeepLatest %v, Resubscribe %v, timeout at %v): refused %v",
		st.id, opts.MaxWaiting, st.keepLatest, st.resub != nil, st.timeoutAt, st.s == nil)
}

// drawHeldAndTimeout draws, for a stream the game opens, whether a hook holds its goroutines
// in the transport once it is stopped, and its timeout, if any.
func (w *simWorld) drawHeldAndTimeout(st *simStream, opts *calls.StreamOptions) {
	st.held = w.pct(10)
	if w.pct(30) {
		opts.Timeout = time.Duration(1+w.rng.IntN(300)) * time.Millisecond
		st.timeoutAt = w.clock.now + opts.Timeout
	}
}

// opened notes the state of st, whose handle's core is h, once Watch or Bidi has returned.
func (w *simWorld) opened(st *simStream, h *callcore.Stream[*testpb.EchoRequest, *testpb.EchoResponse]) {
	st.s, _ = h.Owner().(*stream)
	if st.s == nil {
		st.decided, st.exited = true, true
	} else {
		w.liveStreams = append(w.liveStreams, st)
	}
}

// seqOf returns the number of a stream message.
func (w *simWorld) seqOf(st *simStream, m *testpb.EchoResponse) int {
	seq, err := strconv.Atoi(m.GetMessage())
	if err != nil {
		w.fail("stream %d: a message that no server sent: %q", st.id, m.GetMessage())
	}
	return seq
}

// handleMessages sets h's OnMessage, or, for every other stream (no draw, so that the worlds
// stay as they were), its OnMessages, whose runs it checks before it takes each message as
// OnMessage does.
func (w *simWorld) handleMessages(st *simStream, h *calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]) {
	if st.id%2 == 1 {
		h.OnMessage = func(m *testpb.EchoResponse) { w.streamMessage(st, m) }
		return
	}
	h.OnMessages = func(ms []*testpb.EchoResponse) {
		if len(ms) > 1 {
			w.longRuns++
		}
		if len(ms) == 0 || len(ms) > st.maxWaiting {
			w.fail("stream %d: OnMessages got a run of %d messages, MaxWaiting %d", st.id, len(ms), st.maxWaiting)
		}
		for _, m := range ms {
			w.streamMessage(st, m)
		}
	}
}

// streamMessage is every simulated OnMessage, and each message of an OnMessages run.
func (w *simWorld) streamMessage(st *simStream, m *testpb.EchoResponse) {
	seq := w.seqOf(st, m)
	switch {
	case !w.inTick:
		w.fail("stream %d: OnMessage ran outside Tick and Close", st.id)
	case st.ends > 0:
		w.fail("stream %d: OnMessage ran after OnEnd", st.id)
	case st.stopped:
		w.fail("stream %d: OnMessage got message %d after the stream was stopped", st.id, seq)
	case seq > st.sent:
		w.fail("stream %d: OnMessage got message %d, the server sent %d", st.id, seq, st.sent)
	case st.keepLatest && seq <= st.delivered:
		w.fail("stream %d (keep-latest): OnMessage got message %d after %d", st.id, seq, st.delivered)
	case !st.keepLatest && seq != st.delivered+1:
		w.fail("stream %d: OnMessage got message %d after %d", st.id, seq, st.delivered)
	}
	st.delivered = seq
}

// streamResume is every simulated Resume: the next attempt's request carries the last
// message delivered, from which the server goes on.
func (w *simWorld) streamResume(st *simStream, last *testpb.EchoResponse) *testpb.EchoRequest {
	n := 0
	if last != nil {
		n = w.seqOf(st, last)
	}
	switch {
	case st.stopped:
		w.fail("stream %d: Resume ran after the stream was stopped", st.id)
	case n != st.delivered:
		w.fail("stream %d: Resume got message %d, the last delivered is %d", st.id, n, st.delivered)
	}
	w.note("stream %d: Resume from message %d", st.id, n)
	return &testpb.EchoRequest{Message: "watch", DelayMs: int64(n)}
}

// streamEnd is every simulated OnEnd.
func (w *simWorld) streamEnd(st *simStream, err error) {
	st.ends++
	st.endErr = err
	w.note("stream %d: OnEnd(%v)", st.id, err)
	if st.ends > 1 {
		w.fail("stream %d: OnEnd ran %d times", st.id, st.ends)
		return
	}
	if !w.inTick {
		w.fail("stream %d: OnEnd ran outside Tick and Close", st.id)
	}
	if st.s == nil {
		var ce *calls.Error
		if !errors.As(err, &ce) || !ce.NotSent() {
			w.fail("stream %d: refused at open, ended with %v, not NotSent", st.id, err)
		}
		return
	}
	switch {
	case st.first != nil:
		if !errors.Is(err, st.first) {
			w.fail("stream %d: stopped first by %v, ended with %v", st.id, st.first, err)
		}
	case st.timedOut:
		if !errors.Is(err, calls.ErrTimeout) {
			w.fail("stream %d: timed out first, ended with %v", st.id, err)
		}
	case st.finalCode != nil && *st.finalCode == codes.OK && st.stopped && st.delivered != st.sent:
		// A stop after the server's OK discarded messages: the end is the stop's, never nil.
		if !errors.Is(err, st.firstStop) {
			w.fail("stream %d: the server ended it OK, a stop (%v) discarded messages, OnEnd got %v", st.id, st.firstStop, err)
		}
	case st.finalCode != nil:
		if got := status.Code(err); got != *st.finalCode {
			w.fail("stream %d: the server ended it with %v, OnEnd got %v", st.id, *st.finalCode, err)
		}
	default:
		w.fail("stream %d: OnEnd(%v) before anything decided its end", st.id, err)
	}
	if !st.stopped && st.delivered != st.sent {
		w.fail("stream %d: ended without a stop, OnMessage got up to message %d of the %d sent", st.id, st.delivered, st.sent)
	}
	// NotSent says that the stream never reached a server: no transport stream was opened.
	if ce := (*calls.Error)(nil); errors.As(err, &ce) && ce.NotSent() && st.opens > 0 {
		w.fail("stream %d: ended NotSent (%v), but the server had it open", st.id, err)
	}
	if st.bh != nil {
		w.bidiEnded(st, err)
	}
}

// pollStreams reads what each live stream's goroutine waits for, once every goroutine is
// blocked, and notes the goroutines that returned.
func (w *simWorld) pollStreams() {
	live := w.liveStreams[:0]
	for _, st := range w.liveStreams {
		if st.pending == nil {
			select {
			case op := <-st.ops:
				st.pending = &op
				if op.open && st.attempts > 0 {
					w.checkReopen(st)
				}
			default:
			}
		}
		if st.bh != nil && st.sendPending == nil {
			select {
			case op := <-st.sendOps:
				st.sendPending = &op
			default:
			}
		}
		// Its end decided and nothing awaited: the goroutines have returned, or return
		// without waiting again (Close decided the end of one it had given up on).
		if st.pending == nil && st.sendPending == nil && st.s.isEnded() {
			st.exited = true
			continue
		}
		live = append(live, st)
	}
	clear(w.liveStreams[len(live):])
	w.liveStreams = live
}

// streamStep answers what one of a stream's goroutines waits for in the transport: its
// receiver's (recvStep) or its sender's (sendStep), drawn if both wait.
func (w *simWorld) streamStep(st *simStream) {
	recv, send := w.recvAnswerable(st), w.sendAnswerable(st)
	if send && (!recv || w.pct(50)) {
		w.sendStep(st)
		return
	}
	w.recvStep(st)
}

// recvStep answers what a stream's receiver waits for in the transport: it opens the
// transport stream or fails to, or the server sends the next message or ends the stream; a
// stream whose context ended gets the context's error, as gRPC returns it.
func (w *simWorld) recvStep(st *simStream) {
	op := st.pending
	st.pending = nil
	w.streamsWoken = true
	s := st.s
	if op.open {
		st.attempts++
		if err := op.ctx.Err(); err != nil {
			st.reply <- simReply{err: status.FromContextError(err).Err()}
			w.note("stream %d: NewStream fails: %v", st.id, err)
			return
		}
		if w.backendDown {
			st.lastEnd = codes.Unavailable
			w.attemptEnds(st)
			w.decide(st)
			st.reply <- simReply{err: status.Error(codes.Unavailable, "simulated: no connection")}
			w.note("stream %d: NewStream fails: the backend is down", st.id)
			return
		}
		cs := &simClientStream{st: st, ctx: op.ctx, left: w.rng.IntN(8)}
		switch n := w.rng.IntN(100); {
		case n < 45:
			cs.end = codes.OK
		case n < 80:
			cs.end = codes.Unavailable
		default:
			cs.end = []codes.Code{codes.Internal, codes.NotFound, codes.PermissionDenied}[w.rng.IntN(3)]
		}
		if st.bh != nil {
			w.drawBidiServer(cs)
		}
		st.cs, st.sentInThis = cs, false
		st.opens++
		st.reply <- simReply{cs: cs}
		w.note("stream %d: attempt %d opens: %d messages, then %v", st.id, st.attempts, cs.left, cs.end)
		return
	}
	cs := op.cs
	if err := cs.ctx.Err(); err != nil {
		st.lastEnd = status.FromContextError(err).Code()
		st.reply <- simReply{err: status.FromContextError(err).Err()}
		w.note("stream %d: RecvMsg returns the context's %v", st.id, err)
		return
	}
	if !st.keepLatest && s.received.Load()-s.consumed.Load() >= uint64(st.maxWaiting) {
		w.fail("stream %d: RecvMsg with a full ring: %d received, %d consumed, MaxWaiting %d", st.id, s.received.Load(), s.consumed.Load(), st.maxWaiting)
	}
	if cs.left == 0 {
		cs.ended = true
		st.lastEnd = cs.end
		w.attemptEnds(st)
		w.decide(st)
		err := io.EOF
		if cs.end != codes.OK {
			err = status.Error(cs.end, simServerFailure)
		}
		st.reply <- simReply{err: err}
		w.note("stream %d: the server ends attempt %d: %v", st.id, st.attempts, cs.end)
		return
	}
	cs.left--
	// The server goes on from the request's message: the first request's is 0.
	if st.sent < int(cs.req.GetDelayMs()) {
		w.fail("stream %d: reopened from message %d, the server sent %d", st.id, cs.req.GetDelayMs(), st.sent)
	}
	st.sent, st.sentInThis = int(cs.req.GetDelayMs())+1, true
	cs.req = &testpb.EchoRequest{DelayMs: int64(st.sent)}
	st.reply <- simReply{msg: strconv.Itoa(st.sent)}
	w.note("stream %d: the server sends message %d", st.id, st.sent)
}

// attemptEnds notes when the current attempt of st ended, with the server's end or a failed
// NewStream, for the backoff of a reopening that follows.
func (w *simWorld) attemptEnds(st *simStream) {
	st.endedAt, st.sentInLast, st.sentInThis = w.clock.now, st.sentInThis, false
}

// checkReopen verifies a reopening as its goroutine opens the transport stream again: its
// last attempt ended with one of Resubscribe's codes, nothing stopped the stream, and never
// before the backoff is over.
func (w *simWorld) checkReopen(st *simStream) {
	if st.sentInLast {
		st.inARow = 0
	}
	st.inARow++
	switch {
	case st.stopped:
		w.fail("stream %d: reopened after it was stopped", st.id)
	case !st.resub[st.lastEnd]:
		w.fail("stream %d: reopened after an attempt ended with %v, not one of its codes", st.id, st.lastEnd)
	case w.clock.now < st.endedAt+w.leastBackoff(st):
		w.fail("stream %d: reopened at %v, its attempt %d ended at %v, before its backoff of at least %v was over",
			st.id, w.clock.now, st.attempts, st.endedAt, w.leastBackoff(st))
	}
}

// leastBackoff returns the shortest backoff st's reopening may wait: BaseDelay, times the
// default Multiplier for each reopening in a row after the first, at most the default
// MaxDelay (no jitter). The receiver counts the reopenings in a row from its last attempt
// that pushed a message, which with KeepLatest may be earlier than the last in which the
// server sent one (a message that replaced a waiting one is not pushed), so its backoff is
// this one or longer.
func (w *simWorld) leastBackoff(st *simStream) time.Duration {
	d, most := float64(st.base), float64(max(defaultBackoffMax, st.base))
	for i := 1; i < st.inARow && d < most; i++ {
		d *= defaultBackoffMultiplier
	}
	return time.Duration(min(d, most))
}

// decide notes that the attempt's end, st.lastEnd, ends the stream unless a reopening
// follows, as the receiver decides: Resubscribe's codes, on a stream nothing stopped or
// failed. A Bidi stream's receiver pushes its end only once its sender has exited, which the
// simulator may answer steps later, but the server's end came first: a stop, a timeout or a
// failed message meanwhile is not the end's cause (noteTransportEnd).
func (w *simWorld) decide(st *simStream) {
	if st.decided || st.resub[st.lastEnd] && st.s.ctx.Err() == nil {
		return
	}
	st.decided = true
	if st.first == nil && !st.timedOut {
		code := st.lastEnd
		st.finalCode = &code
	}
}

// stopStream notes that the simulator stopped st with cause: the first cause, unless its end
// was decided already.
func (w *simWorld) stopStream(st *simStream, cause error) {
	if st.s == nil {
		return
	}
	w.streamsWoken = true
	st.stopped = true
	if st.firstStop == nil {
		st.firstStop = cause
	}
	if !st.decided && !st.s.isEnded() && st.first == nil && !st.timedOut {
		st.first = cause
		st.decided = true
	}
}

// cancelStream has the game cancel one of its streams.
func (w *simWorld) cancelStream() {
	st := w.streams[w.rng.IntN(len(w.streams))]
	w.stopStream(st, calls.ErrCancelled)
	if st.bh != nil {
		st.bh.Cancel()
	} else {
		st.h.Cancel()
	}
	w.note("game cancels stream %d", st.id)
}

// closeStreams is the game's CloseStreams, or Shutdown's and Close's.
func (w *simWorld) closeStreams(closing bool) {
	for _, st := range w.streams {
		if st.ends == 0 {
			w.stopStream(st, calls.ErrClosed)
		}
	}
	w.r.streams.stopAll(closing)
}

// streamsTimedOut notes, before the turn's stream step, the streams whose timeout falls by
// the turn's clock and whose end is not decided: the timeout is their first cause.
func (w *simWorld) streamsTimedOut() {
	for _, st := range w.liveStreams {
		if st.s.timeout > 0 && w.e.nowNs >= st.s.opened+int64(st.s.timeout) && !st.decided && !st.s.isEnded() {
			st.timedOut, st.decided = true, true
		}
	}
}

// pendingStream returns a random live stream whose goroutine waits in the transport, or nil.
func (w *simWorld) pendingStream() *simStream {
	n := 0
	for _, st := range w.liveStreams {
		if w.answerable(st) {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	k := w.rng.IntN(n)
	for _, st := range w.liveStreams {
		if w.answerable(st) {
			if k == 0 {
				return st
			}
			k--
		}
	}
	return nil
}

// answerable reports whether the simulator may answer what one of st's goroutines waits for
// in the transport.
func (w *simWorld) answerable(st *simStream) bool {
	return w.recvAnswerable(st) || w.sendAnswerable(st)
}

// recvAnswerable reports whether the simulator may answer what st's receiver waits for in the
// transport: it waits, no hook holds it, and the server does not wait for the client's
// CloseSend before it ends.
func (w *simWorld) recvAnswerable(st *simStream) bool {
	if st.pending == nil || w.hookHolds(st) {
		return false
	}
	cs := st.pending.cs
	return cs == nil || !(cs.left == 0 && cs.untilClose && !cs.halfClosed && cs.ctx.Err() == nil)
}

// hookHolds reports whether a hook holds st's goroutines in the transport: once its context
// ended, with held.
func (w *simWorld) hookHolds(st *simStream) bool {
	return st.held && st.s.ctx.Err() != nil
}

// heldStream reports whether a hook holds a stream's goroutine in the transport.
func (w *simWorld) heldStream() bool {
	held := false
	for _, st := range w.liveStreams {
		if (st.pending != nil || st.sendPending != nil) && w.hookHolds(st) {
			held = true
			if st.sendPending != nil {
				w.bidiSeen.sendersHeld++
			}
		}
	}
	return held
}

// checkStreams verifies the streams' invariants between steps.
func (w *simWorld) checkStreams() {
	for _, st := range w.liveStreams {
		s := st.s
		rcv, cons := s.received.Load(), s.consumed.Load()
		if rcv-cons > uint64(st.maxWaiting) || cons > rcv {
			w.fail("stream %d: %d received, %d consumed, MaxWaiting %d", st.id, rcv, cons, st.maxWaiting)
		}
		if st.bh != nil && st.ends == 0 && st.bh.Unsent() != nil {
			w.fail("stream %d: Unsent lists messages before the end was delivered", st.id)
		}
		if st.pending == nil && !st.keepLatest && s.stalled.Load() && rcv-cons < uint64(st.maxWaiting) && s.ctx.Err() == nil {
			w.fail("stream %d: its receiver waits for a place in its ring, which has %d free: a lost wake-up", st.id, uint64(st.maxWaiting)-(rcv-cons))
		}
	}
	if w.steps%128 == 0 || w.host == hostClosed {
		w.checkStreamStats()
	}
}

// checkStreamStats verifies StreamStats' identities, for each stream method.
func (w *simWorld) checkStreamStats() {
	stats := w.r.Stats()
	for _, path := range [...]string{simWatch.Path(), simBidi.Path()} {
		ms, ok := stats.Methods[path]
		if !ok {
			continue
		}
		ss := ms.Streams
		if ss.Received != ss.Delivered+uint64(ss.Waiting)+ss.Replaced+ss.Discarded {
			w.fail("StreamStats of %s: Received %d ≠ Delivered %d + Waiting %d + Replaced %d + Discarded %d", path, ss.Received, ss.Delivered, ss.Waiting, ss.Replaced, ss.Discarded)
		}
		var ended uint64
		for _, n := range ss.Ended {
			ended += n
		}
		if ss.Opened != uint64(ss.Open)+ended {
			w.fail("StreamStats of %s: Opened %d ≠ Open %d + Σ Ended %d", path, ss.Opened, ss.Open, ended)
		}
		var opened, sent, unsent uint64
		for _, st := range w.streams {
			if (st.bh != nil) == (path == simBidi.Path()) {
				opened++
				sent += uint64(len(st.got))
				unsent += uint64(len(st.unsent))
			}
		}
		if ss.Opened != opened {
			w.fail("StreamStats of %s: Opened %d, the game opened %d", path, ss.Opened, opened)
		}
		if ss.Sent != sent || ss.Unsent != unsent {
			w.fail("StreamStats of %s: Sent %d, Unsent %d; the server got %d, Unsent lists %d", path, ss.Sent, ss.Unsent, sent, unsent)
		}
	}
}

// checkStreamsClosed verifies that once Close has returned, every stream has ended once and
// nothing is open or waiting.
func (w *simWorld) checkStreamsClosed() {
	for _, st := range w.streams {
		if st.ends != 1 {
			w.fail("stream %d: OnEnd ran %d times by the end", st.id, st.ends)
		}
	}
	s := w.r.Stats()
	if s.StreamsOpen != 0 || s.MessagesWaiting != 0 {
		w.fail("after Close, Stats: StreamsOpen %d, MessagesWaiting %d", s.StreamsOpen, s.MessagesWaiting)
	}
	w.checkStreamStats()
}

// releaseStreams answers every stream goroutine still waiting in the transport with its
// context's error, once every stream is stopped, so that the seed's bubble ends with no
// goroutine left: after a broken invariant, or after Close gave up on some.
func (w *simWorld) releaseStreams() {
	w.r.streams.stopAll(true)
	for range 64 {
		w.wait()
		w.pollStreams()
		if len(w.liveStreams) == 0 {
			return
		}
		for _, st := range w.liveStreams {
			if st.pending != nil {
				st.pending = nil
				st.reply <- simReply{err: status.Error(codes.Canceled, "simulation over")}
			}
			if st.sendPending != nil {
				st.sendPending = nil
				st.sendReply <- status.Error(codes.Canceled, "simulation over")
			}
		}
	}
}
