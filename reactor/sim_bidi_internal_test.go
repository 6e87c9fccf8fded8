package reactor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/testpb"
)

// Bidi streams in the simulation. Their receiving goroutine is stepped as a Watch stream's
// is (sim_stream_internal_test.go); their sending goroutine, the real one too
// (stream.sendLoop), waits in the simulated transport's SendMsg and CloseSend for the
// simulator's answer, given one stream at a time as RecvMsg's. The game sends numbered
// messages, in bursts that may pass MaxSendQueue, now and then one that does not encode,
// closes its side, cancels; the scripted server takes each message, or stops reading, or
// waits for the client's CloseSend before it ends. The invariants: each message Send accepted
// is taken by the server once, in order, or listed by Unsent after the end, in order, never
// both (but for the one in SendMsg when Close gave up on a sender a hook held, which is
// neither); Send and CloseSend fail as documented; an end that leaves messages unsent is OK
// only if the server ended the stream OK; StreamStats' Sent and Unsent count what the server
// got and what Unsent listed.

// simBidi is the simulation's bidirectional method.
var simBidi = calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpcsim.Sim/Chat")

// simBadMessage is the text of a message that does not encode (invalid UTF-8).
const simBadMessage = "\xff"

// bidiSide is what the simulator keeps of a Bidi stream's sending side.
type bidiSide struct {
	sendOps     chan simSendOp // capacity 1: what the sender waits for
	sendReply   chan error     // capacity 1
	sendPending *simSendOp     // read from sendOps, not answered yet
	sendMax     int            // MaxSendQueue

	accepted  []int // the numbers of the messages Send accepted, in order
	got       []int // those the server took, in order
	answered  int   // SendMsg calls the simulator answered, either way
	closeSent bool  // CloseSend returned nil
	unsent    []int // what Unsent listed once the end was delivered
}

// bidiSeen counts, in one seed, the paths of Bidi's sending that TestSimulation requires its
// seeds to reach.
type bidiSeen struct {
	overloaded   int // Sends refused: MaxSendQueue
	done         int // Sends and CloseSends refused: ErrStreamDone
	halfClosed   int // CloseSends the server got
	refused      int // SendMsgs that failed: the message went to Unsent
	badMessages  int // messages that did not encode
	unsent       int // messages Unsent listed
	unsentOK     int // ends OK with messages unsent
	inHook       int // messages a hook held in SendMsg when Close gave up on their sender
	sendersHeld  int // senders a hook held in the transport
	deafServers  int // servers that stopped reading
	closeServers int // servers that waited for CloseSend before they ended
}

// bidiServer is how the scripted server of a Bidi stream's attempt treats the client's side.
type bidiServer struct {
	deaf       bool // it stops reading: SendMsg waits until the stream ends
	untilClose bool // it ends only once it has the client's CloseSend
	halfClosed bool // it has the client's CloseSend
	ended      bool // it has ended the stream
}

// simSendOp is what a Bidi stream's sender waits for in the simulated transport.
type simSendOp struct {
	cs        *simClientStream
	msg       *testpb.EchoRequest // SendMsg's; nil for CloseSend
	closeSend bool
}

// bidiSend waits for the simulator's answer to SendMsg(msg) or CloseSend, on the sender's
// goroutine. Once the stream's context has ended it returns at once, as gRPC does, without
// the simulator: the sender may take a message or see the context first (select), and the
// seed must run the same either way.
func (cs *simClientStream) bidiSend(msg *testpb.EchoRequest, closeSend bool) error {
	if err := cs.ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	cs.st.sendOps <- simSendOp{cs: cs, msg: msg, closeSend: closeSend}
	return <-cs.st.sendReply
}

// openBidi has the game open a Bidi stream with drawn options.
func (w *simWorld) openBidi() {
	w.streamsWoken = true
	st := &simStream{id: len(w.streams) + 1, ops: make(chan simOp, 1), reply: make(chan simReply, 1)}
	w.streams = append(w.streams, st)
	opts := &calls.StreamOptions{Context: context.WithValue(context.Background(), simStreamKey{}, st)}
	st.sendOps, st.sendReply = make(chan simSendOp, 1), make(chan error, 1)
	opts.MaxWaiting = 1 + w.rng.IntN(8)
	opts.MaxSendQueue = 1 + w.rng.IntN(8)
	st.maxWaiting, st.sendMax = opts.MaxWaiting, opts.MaxSendQueue
	if w.pct(3) {
		opts.Resubscribe = &calls.Resubscribe{} // refused: Watch only
	}
	w.drawHeldAndTimeout(st, opts)
	h := calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{
		OnEnd: func(err error) { w.streamEnd(st, err) },
	}
	w.handleMessages(st, &h)
	st.bh = Bidi(w.r, simBidi, opts, h)
	w.bidis = append(w.bidis, st)
	w.opened(st, (*callcore.Stream[*testpb.EchoRequest, *testpb.EchoResponse])(st.bh))
	w.note("game opens bidi stream %d (MaxWaiting %d, MaxSendQueue %d, timeout at %v): refused %v",
		st.id, opts.MaxWaiting, opts.MaxSendQueue, st.timeoutAt, st.s == nil)
}

// drawBidiServer draws how the server of a Bidi stream's new attempt treats the client's side.
func (w *simWorld) drawBidiServer(cs *simClientStream) {
	cs.deaf, cs.untilClose = w.pct(15), w.pct(40)
	if cs.deaf {
		w.bidiSeen.deafServers++
	}
	if cs.untilClose {
		w.bidiSeen.closeServers++
	}
}

// sendDone reports whether Send and CloseSend must fail with ErrStreamDone on st by what the
// game knows: refused at open, CloseSend returned, stopped, or its end delivered.
func (st *simStream) sendDone() bool {
	return st.s == nil || st.closeSent || st.stopped || st.ends > 0
}

// sendMayBeDone reports whether Send and CloseSend may fail with ErrStreamDone on st: also
// once its context has ended (a timeout, a message that did not encode) or its end is
// decided.
func (st *simStream) sendMayBeDone() bool {
	return st.sendDone() || st.s.ctx.Err() != nil || st.s.isEnded()
}

// bidiSendSome has the game Send a burst of messages on one of its Bidi streams, sometimes
// more than MaxSendQueue, now and then one that does not encode.
func (w *simWorld) bidiSendSome() {
	w.streamsWoken = true
	st := w.bidis[w.rng.IntN(len(w.bidis))]
	n := 1 + w.rng.IntN(st.sendMax+2)
	accepted, full := 0, 0
	for range n {
		seq := len(st.accepted) + 1
		msg := &testpb.EchoRequest{DelayMs: int64(seq)}
		if w.pct(1) {
			msg.Message = simBadMessage
		}
		// At most one message taken from the queue waits in SendMsg: the queue holds this many
		// or one fewer.
		queued := len(st.accepted) - st.answered
		err := st.bh.Send(msg)
		switch {
		case err == nil:
			if st.sendDone() {
				w.fail("stream %d: Send accepted a message after CloseSend, a stop or the end", st.id)
			}
			if queued > st.sendMax {
				w.fail("stream %d: Send accepted a message with %d queued, MaxSendQueue %d", st.id, queued, st.sendMax)
			}
			st.accepted = append(st.accepted, seq)
			accepted++
		case errors.Is(err, calls.ErrOverloaded):
			if st.sendDone() {
				w.fail("stream %d: Send after CloseSend, a stop or the end returned %v, not ErrStreamDone", st.id, err)
			}
			if queued < st.sendMax {
				w.fail("stream %d: Send refused a message with at most %d queued, MaxSendQueue %d: %v", st.id, queued, st.sendMax, err)
			}
			full++
			w.bidiSeen.overloaded++
		case errors.Is(err, calls.ErrStreamDone):
			if !st.sendMayBeDone() {
				w.fail("stream %d: Send returned ErrStreamDone on a stream open for sending", st.id)
			}
			w.bidiSeen.done++
		default:
			w.fail("stream %d: Send returned %v", st.id, err)
		}
	}
	w.note("game sends %d messages on stream %d: %d accepted, %d refused as the queue was full", n, st.id, accepted, full)
}

// bidiCloseSend has the game close the sending side of one of its Bidi streams.
func (w *simWorld) bidiCloseSend() {
	w.streamsWoken = true
	st := w.bidis[w.rng.IntN(len(w.bidis))]
	err := st.bh.CloseSend()
	switch {
	case err == nil:
		if st.sendDone() {
			w.fail("stream %d: CloseSend returned nil after CloseSend, a stop or the end", st.id)
		}
		st.closeSent = true
	case errors.Is(err, calls.ErrStreamDone):
		if !st.sendMayBeDone() {
			w.fail("stream %d: CloseSend returned ErrStreamDone on a stream open for sending", st.id)
		}
		w.bidiSeen.done++
	default:
		w.fail("stream %d: CloseSend returned %v", st.id, err)
	}
	w.note("game closes the sending side of stream %d: %v", st.id, err)
}

// sendAnswerable reports whether the simulator may answer what st's sender waits for: it
// waits, no hook holds it, and the server reads (or the stream ended, or the message does
// not encode, which gRPC finds before it waits for the window).
func (w *simWorld) sendAnswerable(st *simStream) bool {
	op := st.sendPending
	if op == nil || w.hookHolds(st) {
		return false
	}
	cs := op.cs
	return op.closeSend || !cs.deaf || cs.ended || cs.ctx.Err() != nil || op.msg.GetMessage() == simBadMessage
}

// sendStep answers what st's sender waits for in the transport: SendMsg fails with the
// context's error once it ended, with Internal for a message that does not encode (its
// stream then fails), with io.EOF once the server ended; else the server takes the message,
// which must be the next one Send accepted. CloseSend gives the server the client's end.
func (w *simWorld) sendStep(st *simStream) {
	op := st.sendPending
	st.sendPending = nil
	w.streamsWoken = true
	cs := op.cs
	if !op.closeSend {
		st.answered++
	}
	if err := cs.ctx.Err(); err != nil {
		if !op.closeSend {
			w.bidiSeen.refused++
		}
		st.sendReply <- status.FromContextError(err).Err()
		w.note("stream %d: SendMsg or CloseSend returns the context's %v", st.id, err)
		return
	}
	if op.closeSend {
		if cs.ended {
			st.sendReply <- io.EOF
			return
		}
		if len(st.got) != len(st.accepted) {
			w.fail("stream %d: the server got CloseSend after %d messages of the %d accepted before it", st.id, len(st.got), len(st.accepted))
		}
		cs.halfClosed = true
		w.bidiSeen.halfClosed++
		st.sendReply <- nil
		w.note("stream %d: the server gets the client's CloseSend", st.id)
		return
	}
	if _, err := st.s.codec.Marshal(op.msg); err != nil {
		w.failStream(st, calls.ErrInvalidArgument)
		w.bidiSeen.badMessages++
		st.sendReply <- status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
		w.note("stream %d: SendMsg: message %d does not encode", st.id, op.msg.GetDelayMs())
		return
	}
	if cs.ended {
		w.bidiSeen.refused++
		st.sendReply <- io.EOF
		return
	}
	seq, i := int(op.msg.GetDelayMs()), len(st.got)
	if i >= len(st.accepted) || st.accepted[i] != seq {
		w.fail("stream %d: the server got message %d after %v; Send accepted %v", st.id, seq, st.got, st.accepted)
	}
	st.got = append(st.got, seq)
	st.sendReply <- nil
	w.note("stream %d: the server gets message %d", st.id, seq)
}

// failStream notes that st failed with cause, as stream.fail does (a message that did not
// encode): its first cause, unless its end was decided already. Unlike a stop, the messages
// waiting are still delivered.
func (w *simWorld) failStream(st *simStream, cause error) {
	if !st.decided && !st.s.isEnded() && st.first == nil && !st.timedOut {
		st.first, st.decided = cause, true
	}
}

// bidiEnded verifies, as a Bidi stream's end is delivered, what became of its messages: the
// server got a prefix of what Send accepted, in order, and Unsent lists the rest, in order —
// but for the message in SendMsg when Close gave up on a sender a hook held, which is in
// neither; and an end that leaves messages unsent is OK only if the server ended it OK.
func (w *simWorld) bidiEnded(st *simStream, err error) {
	for _, m := range st.bh.Unsent() {
		st.unsent = append(st.unsent, int(m.GetDelayMs()))
	}
	want := slices.Concat(st.got, st.unsent)
	if op := st.sendPending; op != nil && !op.closeSend {
		if !w.stuckStreams {
			w.fail("stream %d: its end was delivered while its sender waits in SendMsg with message %d", st.id, op.msg.GetDelayMs())
		}
		want = slices.Concat(st.got, []int{int(op.msg.GetDelayMs())}, st.unsent)
		w.bidiSeen.inHook++
	}
	w.bidiSeen.unsent += len(st.unsent)
	if err == nil && len(st.unsent) > 0 {
		w.bidiSeen.unsentOK++
	}
	if !slices.Equal(want, st.accepted) {
		w.fail("stream %d: Send accepted %v; the server got %v, Unsent lists %v", st.id, st.accepted, st.got, st.unsent)
	}
	if err == nil && len(st.unsent) > 0 && (st.finalCode == nil || *st.finalCode != codes.OK) {
		w.fail("stream %d: ended OK with %d messages unsent, but the server did not end it OK", st.id, len(st.unsent))
	}
}

// add counts, in b, one more seed for each path that seed reached.
func (b *bidiSeen) add(seed bidiSeen) {
	for i, n := range seed.counts() {
		if *n > 0 {
			*b.counts()[i]++
		}
	}
}

// counts returns b's counts, in the order of bidiSeenNames.
func (b *bidiSeen) counts() []*int {
	return []*int{&b.overloaded, &b.done, &b.halfClosed, &b.refused, &b.badMessages, &b.unsent,
		&b.unsentOK, &b.inHook, &b.sendersHeld, &b.deafServers, &b.closeServers}
}

// bidiSeenNames names bidiSeen's counts, for TestSimulation's messages.
var bidiSeenNames = []string{"was a Send refused as MaxSendQueue messages waited",
	"did Send or CloseSend return ErrStreamDone", "did the server get a CloseSend",
	"did SendMsg fail, its message going to Unsent", "did a message not encode",
	"did Unsent list a message", "did a stream end OK with messages unsent",
	"did Close give up on a sender a hook held in SendMsg", "did a hook hold a sender",
	"did a server stop reading", "did a server wait for CloseSend before it ended"}

// check fails t unless each of b's paths was reached in one of the n seeds at least, and
// logs in how many.
func (b *bidiSeen) check(t *testing.T, n uint64) {
	for i, c := range b.counts() {
		if *c == 0 {
			t.Errorf("in none of %d seeds %s", n, bidiSeenNames[i])
		}
	}
	t.Logf("Bidi, in how many of the %d seeds: %v", n, b.summary())
}

// summary lists how many seeds reached each path.
func (b *bidiSeen) summary() string {
	var parts []string
	for i, c := range b.counts() {
		parts = append(parts, fmt.Sprintf("%s: %d", bidiSeenNames[i], *c))
	}
	return strings.Join(parts, "; ")
}
