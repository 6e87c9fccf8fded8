// Package callcore holds the state of submitted calls: the call record, which the reactor
// reuses from one call to the next, and the typed target that delivery hands the outcome to:
// the promise of a call made with reactor.Call, which users hold through package calls, or
// the callback of a call made with reactor.Go. It is internal so that users reach a call only
// through its promise or its callback.
//
// A record's fields are owned by one party at a time, and each group below says who:
//
//  1. The reactor goroutine takes a free record for each call submitted to it, fills the
//     request fields from the submission, and owns the scheduling fields (but for those whose
//     comments say otherwise). It settles the calls that time out, are cancelled or are cut
//     off by Close. Calls rejected at submission never get a record.
//  2. An invoker lane runs the transport call, which encodes the request, and settles the call
//     with its result.
//  3. The Tick goroutine delivers the outcome to the call's target (its promise or its
//     callback), then frees the record.
//
// The settler is whoever moves the record's claim to a settled state first, by
// compare-and-swap: it alone writes the outcome fields, once, then appends the record to the
// delivery queue; the reactor, settling a call a lane is running (Cut), appends it only once
// that lane reports that it has finished with it. Hand-offs go through queues with locks or
// atomics, so each write happens before the next owner's reads.
//
// Every use of a record has a generation, kept in the same atomic word as the claim. Whatever
// may outlive a use (a deadline heap entry, an entry of the lanes' queue, a cancel request)
// carries the generation it was made for, and every claim transition compares it, so nothing
// meant for an earlier use can act on a later one.
package callcore

import (
	"context"
	"math"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/donectx"
)

// Claim states of a use of a record. Unclaimed, Running and Joined are unsettled; the other
// four are final.
const (
	Unclaimed uint32 = iota // waiting for an invoker lane
	Running                 // claimed by a lane: sent, or about to be
	Joined                  // a member of a flight (a coalesced or hedged call's attempts), which no lane runs with this record
	Dropped                 // settled by the reactor before any lane claimed it: never sent
	Cut                     // settled by the reactor while a lane ran it; the lane's result is discarded
	Completed               // settled by the lane that ran it, or that ran the attempt that decided its flight, with the transport's result
	Left                    // settled by the reactor while Joined: may have been sent; nothing reads the record
)

// Visible states of a call, as package calls reports them.
const (
	Pending uint8 = iota
	Succeeded
	Failed
)

// Reason classifies an outcome for statistics.
type Reason uint8

// Reasons for an outcome.
const (
	ReasonNone       Reason = iota // succeeded
	ReasonError                    // a gRPC status, a decode failure or another failure
	ReasonTimeout                  // DeadlineExceeded, local or native
	ReasonOverloaded               // rejected by admission control
	ReasonCancelled                // Promise.Cancel or the parent context
	ReasonClosed                   // the reactor was closed
	ReasonInvalid                  // rejected locally as invalid or too large
	ReasonShed                     // not sent by its lane: too little time left to finish
)

// Ops are the operations of one method, built once per method so that a call needs no
// allocation for them.
type Ops struct {
	// Path is the full method path, "/pkg.Service/Method".
	Path string
	// NewResponse returns a new, empty response message.
	NewResponse func() proto.Message
}

// Owner is what a promise asks of the reactor that runs its call. Both methods may be called
// from any goroutine and must not block.
type Owner interface {
	// Cancel asks the owner to settle the call it admitted at submission position pos (modulo
	// 2³²) with ErrCancelled, unless it is settled already.
	Cancel(pos uint32)
	// Redeliver asks the owner to run t's callbacks added after delivery, at the next Tick
	// that starts after Redeliver returns.
	Redeliver(t Target)
}

// Target is the typed side of a call: its promise, or the callback of a call without one. The
// owner delivers a call by calling its Target's Deliver on the Tick goroutine.
type Target interface {
	// Deliver makes the outcome visible. On the first delivery of an admitted call, c is its
	// record: Deliver takes the outcome from it and hands it back through h.Delivered before
	// any callback runs. c is nil for a call rejected at submission and for a later delivery
	// of a promise that got new callbacks. Then Deliver runs the callbacks not run yet, each
	// isolated by h.Recover.
	Deliver(h Host, c *Call)
}

// RunTarget is the Target of carriers marked Run: the messages of a stream with a batch
// handler. The owner hands it a run of carriers at once, c and those of the same Target that
// follow c in the batch in hand, so that a run costs one callback and one reading of the clock.
type RunTarget interface {
	Target
	// DeliverRun delivers run, one or more carriers of the target's stream in the order
	// received, in one callback.
	DeliverRun(h Host, run []*Call)
}

// Func is the Target of a call submitted with a callback and no promise: the callback runs
// once, with the response or the error.
type Func[Resp proto.Message] func(Resp, error)

// Deliver implements Target.
func (f Func[Resp]) Deliver(h Host, c *Call) {
	var resp Resp
	err := c.Err
	if err == nil {
		resp, _ = c.Value.(Resp) // the lane decoded into Ops.NewResponse(), a Resp
	}
	h.Delivered(c)
	if mutation == "callback-twice" && err != nil {
		runFunc(h, f, resp, err) // the bug: a failed call's callback runs twice
	}
	defer h.Recover()
	f(resp, err)
}

func runFunc[Resp proto.Message](h Host, f Func[Resp], resp Resp, err error) {
	defer h.Recover()
	f(resp, err)
}

// Rejected is the Target of a call submitted with a callback and rejected at submission: the
// callback runs once, with the rejection.
type Rejected[Resp proto.Message] struct {
	Fn  func(Resp, error)
	Err error
}

// Deliver implements Target.
func (r *Rejected[Resp]) Deliver(h Host, _ *Call) {
	var zero Resp
	h.Delivered(nil)
	defer h.Recover()
	r.Fn(zero, r.Err)
}

// Host is what delivering a call asks of the goroutine that runs Tick.
type Host interface {
	// Delivered accounts for the first delivery of record c, whose outcome the promise has
	// taken, and frees the record. c is nil for a call that Call or Go rejected.
	Delivered(c *Call)
	// Recover is deferred around each callback: it recovers the callback's panic, if any,
	// and reports it. It must be called directly by defer.
	Recover()
}

// Call is the record of one use: the request, its scheduling, and its outcome until the
// target takes it. Records are reused, so it holds nothing that the promise keeps; options
// that few calls use live in Extra.
type Call struct {
	// Request fields: written by the reactor goroutine from the submission before the call
	// reaches a lane; read-only after. Times are nanoseconds on the owner's clock since the
	// owner's epoch.
	Ops          *Ops
	Target       Target        // the promise or callback of this use
	Req          proto.Message // the request, which the lane encodes; not to be modified until settled
	Submitted    int64         // when Call (or Go) ran
	Deadline     int64         // Submitted plus the call's timeout
	Extra        *Extra        // nil unless the call has metadata, a parent context, call options or a snapshot
	WaitForReady bool          // passed to gRPC as grpc.WaitForReady(true)
	Metadata     bool          // the response header and trailer are asked for

	// Scheduling fields: owned by the reactor goroutine, but for Claimed, state (the claim) and
	// cancel, whose comments say who writes them.
	Queued bool // handed to the invoker lanes' ready queue
	InHeap bool // counted among the owner's unsettled calls in its deadline heap
	// Claimed is when a lane claimed the use (moved it to Running), as Since counts it:
	// written by that lane right after the claim, read once the call is delivered; zero if
	// no lane claimed it (the claim tells that apart). It fills what would be padding.
	Claimed uint32
	// state holds the generation of the use in its upper 32 bits and the claim in its lower
	// ones. The claim says who owns the transport side of the use, and who settled it. It
	// starts Unclaimed. An invoker lane that takes the call from the ready queue moves it to
	// Running before sending it, and to Completed when the transport call returns; the
	// reactor, settling it first, moves it to Dropped (from Unclaimed) or Cut (from
	// Running). A call of a coalesced or hedged method moves on from Running to Joined once
	// its lane has joined it to a flight, then to Completed (by the lane of the flight's
	// attempt that decided it) or Left (by the reactor). Each step is a compare-and-swap and
	// the first wins, so a use is sent at most once, never after it settled, and settled
	// exactly once.
	state atomic.Uint64
	// cancel is the done state of the transport call's context, which ending cancels it
	// with the error it then reports: the lane that claimed the call publishes it
	// (SetCancel), and the reactor ends it once it has cut the call (CancelTransport). If the
	// reactor cuts the call first, it leaves a mark here instead (deadlineMark or
	// cancelMark), which tells the lane to end the context itself, and with which error.
	cancel atomic.Pointer[donectx.State]

	// Outcome fields: written once by the settler before the call is queued for delivery.
	Value   proto.Message // the response; nil on failure
	Err     error         // the *calls.Error of a failure; nil on success
	Header  metadata.MD   // the response header, if asked for and kept
	Trailer metadata.MD   // the response trailer, if asked for and kept
	Reason  Reason        // how the call ended, for statistics
	// Run marks a stream's carrier whose Target is a RunTarget: Tick hands it, with the
	// carriers of the same Target that follow it in the batch in hand, to DeliverRun. Written
	// once, when the carrier is made; it fills what would be padding.
	Run     bool
	Settled uint32 // when the outcome was queued for delivery, as Since counts it
}

// Since returns t, a time on the owner's clock, as Claimed and Settled hold it: in whole
// microseconds after Submitted, which is within 32 bits for any call's timeout (up to an hour
// and more). It saturates: zero for a time before Submitted, about 71 minutes at most.
func (c *Call) Since(t int64) uint32 {
	return uint32(min(max(t-c.Submitted, 0)/1e3, math.MaxUint32))
}

// At returns the time on the owner's clock of us, a Claimed or Settled value: t rounded down
// to the microsecond after Submitted, for the t that Since was given.
func (c *Call) At(us uint32) int64 { return c.Submitted + int64(us)*1e3 }

// StopParentWatch stops the watch on the call's parent context (Extra.StopParent), if any, and
// forgets it: the settler of the call calls it, once, as it settles it.
func (c *Call) StopParentWatch() {
	if x := c.Extra; x != nil && x.StopParent != nil {
		x.StopParent()
		x.StopParent = nil
	}
}

// Extra holds the request fields that most calls do not use, written with the request fields,
// and StopParent: written by the reactor goroutine when it admits the call, before any lane can
// see it, then called and cleared by whoever settles the call (the claim makes that one party).
type Extra struct {
	MD         metadata.MD       // the request metadata, normalised
	Parent     context.Context   // calls.Options.Context
	CallOpts   []grpc.CallOption // calls.Options.CallOptions
	StopParent func() bool       // stops the watch on Parent; nil when none
	// Snapshot is the request's deterministic encoding when it was submitted, kept only
	// when the owner checks that requests are not modified while their calls own them; the
	// lane compares it with the request's encoding before it sends the call. nil otherwise,
	// and for a request that does not encode.
	Snapshot []byte
}

func pack(gen, claim uint32) uint64 { return uint64(gen)<<32 | uint64(claim) }

// Gen returns the generation of the record's current use.
func (c *Call) Gen() uint32 { return uint32(c.state.Load() >> 32) }

// Claim returns the claim of use gen, and false if the record has moved on to a later use.
func (c *Call) Claim(gen uint32) (uint32, bool) {
	s := c.state.Load()
	return uint32(s), uint32(s>>32) == gen
}

// Settler returns the claim of the record's current use, for its settler, which owns the
// use until it is delivered: the final state it moved the claim to.
func (c *Call) Settler() uint32 { return uint32(c.state.Load()) }

// Move moves the claim of use gen from one state to another, and reports whether it did: it
// does not if the claim is in another state or the record has moved on.
func (c *Call) Move(gen, from, to uint32) bool {
	return c.state.CompareAndSwap(pack(gen, from), pack(gen, to))
}

// Unsettled reports whether use gen is current and not settled yet.
func (c *Call) Unsettled(gen uint32) bool {
	claim, ok := c.Claim(gen)
	return ok && claim <= Joined
}

// Recycle ends the current use, which must be settled, and starts the next, Unclaimed. It
// clears every field; the caller owns the record afterwards.
func (c *Call) Recycle() {
	gen := c.Gen() + 1
	c.Ops, c.Target, c.Req, c.Extra = nil, nil, nil, nil
	c.Submitted, c.Deadline, c.Claimed, c.Settled = 0, 0, 0, 0
	c.WaitForReady, c.Metadata, c.Queued, c.InHeap = false, false, false, false
	c.Value, c.Err, c.Header, c.Trailer, c.Reason = nil, nil, nil, nil, ReasonNone
	c.cancel.Store(nil)
	c.state.Store(pack(gen, Unclaimed)) // last: whoever sees the new generation sees a clean record
}

// SetCancel publishes the done state of the transport call's context, for a use a lane has
// claimed: ending it cancels the call. If the reactor cut the use first, it publishes nothing
// and returns the error to end it with (CutError); otherwise it returns nil.
func (c *Call) SetCancel(cancel *donectx.State) (cutErr error) {
	if c.cancel.CompareAndSwap(nil, cancel) {
		return nil
	}
	return CutError(c.cancel.Load() == &deadlineMark)
}

// CancelTransport cancels the transport call of a use the reactor has cut, ending its context
// with CutError of forDeadline, if its lane has published the context's done state; otherwise
// it leaves a mark for the lane, which ends the context itself on publishing.
func (c *Call) CancelTransport(forDeadline bool) {
	mark := &cancelMark
	if forDeadline {
		mark = &deadlineMark
	}
	for {
		if s := c.cancel.Load(); s != nil {
			s.End(CutError(forDeadline))
			return
		}
		if c.cancel.CompareAndSwap(nil, mark) {
			return
		}
	}
}

// The marks CancelTransport leaves for a lane that has not published its context's done
// state: never ended, only compared.
var deadlineMark, cancelMark donectx.State

// CutError is the error a transport call's context reports once the reactor has cut the
// call: context.DeadlineExceeded for the call's deadline or its parent context's
// (forDeadline), context.Canceled for anything else.
func CutError(forDeadline bool) error {
	if forDeadline {
		return context.DeadlineExceeded
	}
	return context.Canceled
}

// Parent returns the call's parent context, or nil.
func (c *Call) Parent() context.Context {
	if c.Extra == nil {
		return nil
	}
	return c.Extra.Parent
}
