// Package callcore holds the untyped state of one submitted call. Package calls wraps it in
// the typed Promise that users hold; package reactor drives it through its life. It is
// internal so that users reach a call only through its Promise.
//
// Ownership of the fields follows the call's life, and each group of fields below says who
// may touch it:
//
//  1. The submitting goroutine fills the request fields, then hands the call to the reactor.
//  2. The reactor goroutine owns the scheduling fields. It settles the calls that time out,
//     are cancelled or are cut off by Close.
//  3. An invoker lane runs the transport call and settles the call with its result.
//  4. The Tick goroutine makes the outcome visible and takes the callbacks, under mu, then
//     runs them outside it.
//
// The settler is whoever moves Claim to a settled state first, by compare-and-swap: it alone
// writes the outcome fields, once, then appends the call to the delivery queue. Hand-offs go
// through mutex-guarded queues, so each write happens before the next owner's reads.
package callcore

import (
	"context"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/codec"
)

// Claim states of an admitted call (Call.Claim). Unclaimed and Running are unsettled; the
// other three are final.
const (
	Unclaimed uint32 = iota // waiting for an invoker lane
	Running                 // claimed by a lane: sent, or about to be
	Dropped                 // settled by the reactor before any lane claimed it: never sent
	Cut                     // settled by the reactor while a lane ran it; the lane's result is discarded
	Completed               // settled by the lane that ran it, with the transport's result
)

// Unsettled reports whether c has not been settled through its Claim yet.
func (c *Call) Unsettled() bool { return c.Claim.Load() <= Running }

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
)

// Ops are the typed operations of one method, built once per method so that a call needs no
// allocation for them.
type Ops struct {
	// Path is the full method path, "/pkg.Service/Method".
	Path string
	// NewResponse returns a new, empty response message.
	NewResponse func() proto.Message
}

// Owner is what a call asks of the reactor that runs it. Both methods may be called from any
// goroutine and must not block.
type Owner interface {
	// Cancel asks the owner to settle the call with ErrCancelled unless it is settled already.
	Cancel(c *Call)
	// Redeliver asks the owner to run callbacks added after delivery, at the next Tick that
	// starts after Redeliver returns.
	Redeliver(c *Call)
}

// Target is the typed side of a call: its promise, which holds the callbacks. The owner
// delivers a call by calling its Target's Deliver on the Tick goroutine.
type Target interface {
	// Deliver makes the outcome visible, tells h about a first delivery before any callback
	// runs, and runs the callbacks registered since the last delivery, each isolated by h.
	Deliver(h Host)
}

// Host is what delivering a call asks of the goroutine that runs Tick.
type Host interface {
	// Delivered accounts for c's first delivery, before its callbacks run.
	Delivered(c *Call)
	// Recover is deferred around each callback: it recovers the callback's panic, if any,
	// and reports it. It must be called directly by defer.
	Recover()
}

// Call is the state of one submitted call. It is allocated with its promise and lives as long
// as the user holds either, so it is kept small: in a burst every outstanding call holds one,
// and each byte of it is a byte of fresh heap the burst touches. Options that few calls use
// live in Extra.
type Call struct {
	// Set at creation; read-only afterwards.
	Ops    *Ops
	Target Target // the promise

	// Request fields: written by the submitting goroutine before hand-off; read-only after.
	// Times are nanoseconds on the owner's clock since the owner's epoch.
	Owner        Owner
	Request      *codec.Buffer // the encoded request; released once the transport is done with it
	Submitted    int64         // when Call ran
	Deadline     int64         // Submitted plus the call's timeout
	Extra        *Extra        // nil unless the call has metadata, a parent context or call options
	WaitForReady bool          // passed to gRPC as grpc.WaitForReady(true)
	NoMetadata   bool          // the response header and trailer are not asked for
	Admitted     bool          // holds an admission slot until delivered

	// Scheduling fields: owned by the reactor goroutine, but for Claim and Ctx.
	Queued bool // handed to the invoker lanes' ready queue
	InHeap bool // counted among the owner's unsettled calls in its deadline heap
	// Claim says who owns the transport side of an admitted call, and who settled it. It
	// starts Unclaimed. An invoker lane that takes the call from the ready queue moves it to
	// Running before sending it, and to Completed when the transport call returns; the
	// reactor, settling it first, moves it to Dropped (from Unclaimed) or Cut (from
	// Running). Each step is a compare-and-swap and the first wins, so a call is sent at most
	// once, never after it settled, and settled exactly once.
	Claim atomic.Uint32
	// Ctx is the context of the transport call: written by the lane before it claims the
	// call, read by the reactor once it has moved the call from Running to Cut. The owner's
	// own type, which also carries its cancel function.
	Ctx context.Context

	// Outcome fields: written once by the settler before the call is queued for delivery.
	Value   proto.Message // the response; nil on failure
	Err     error         // the *calls.Error of a failure; nil on success
	Header  metadata.MD   // the response header, if asked for and kept
	Trailer metadata.MD   // the response trailer, if asked for and kept
	Reason  Reason        // how the call ended, for statistics

	// Delivery state, guarded by mu; the promise's callbacks are guarded by it too.
	mu              sync.Mutex
	visible         bool
	delivered       bool
	redeliverQueued bool
	cancelRequested bool
}

// Extra holds the request fields that most calls do not use, written with the request fields.
// StopParent is a scheduling field, owned by the reactor goroutine.
type Extra struct {
	MD         metadata.MD       // the request metadata, normalised
	Parent     context.Context   // calls.Options.Context
	CallOpts   []grpc.CallOption // calls.Options.CallOptions
	StopParent func() bool       // stops the watch on Parent; nil when none
}

// Parent returns the call's parent context, or nil.
func (c *Call) Parent() context.Context {
	if c.Extra == nil {
		return nil
	}
	return c.Extra.Parent
}

// Reject settles a call that never reached the reactor, and makes the outcome visible at
// once. Its callbacks still run only at the next delivery.
func (c *Call) Reject(err error, reason Reason) {
	c.Err = err
	c.Reason = reason
	c.mu.Lock()
	c.visible = true
	c.mu.Unlock()
}

// State returns the visible state.
func (c *Call) State() uint8 {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case !c.visible:
		return Pending
	case c.Err != nil:
		return Failed
	default:
		return Succeeded
	}
}

// VisibleErr returns the visible error: nil while pending or on success.
func (c *Call) VisibleErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.visible {
		return nil
	}
	return c.Err
}

// VisibleMetadata returns the visible response header and trailer.
func (c *Call) VisibleMetadata() (header, trailer metadata.MD) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.visible {
		return nil, nil
	}
	return c.Header, c.Trailer
}

// RequestCancel asks the owner to cancel the call, once.
func (c *Call) RequestCancel() {
	c.mu.Lock()
	ask := !c.cancelRequested && !c.visible && c.Owner != nil
	c.cancelRequested = true
	c.mu.Unlock()
	if ask {
		c.Owner.Cancel(c)
	}
}

// markDelivered makes the outcome visible and records that the call is delivered; first
// reports whether this is its first delivery. Call with mu held.
func (c *Call) markDelivered() (first bool) {
	first = !c.delivered
	c.visible = true
	c.delivered = true
	c.redeliverQueued = false
	return first
}

// registered notes a new callback, with mu held, and reports whether the owner must be asked
// to run it because the call was delivered already.
func (c *Call) registered() (redeliver bool) {
	redeliver = c.delivered && !c.redeliverQueued
	if redeliver {
		c.redeliverQueued = true
	}
	return redeliver
}
