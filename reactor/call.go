package reactor

import (
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/limitcheck"
)

// Call submits a call of method m with request req and returns its promise at once. It never
// blocks and does no network I/O; it is safe from any goroutine. opts may be nil.
//
// Build a fresh request for every call: Call owns req until the call settles. The request is
// encoded later, on the invoker lane that runs the call, so a request reused for the next
// call and changed before this one settles is sent with its new values: a loop that reuses one
// purchase request and sets a new idempotency key each time may send every purchase with the
// last key. The caller must not modify req meanwhile, as grpc-go says of a message given to
// ClientStream.SendMsg; the race detector reports a request modified while its call is in
// flight, and Config.CheckRequestOwnership (on in reactortest.NewReactor) catches it without
// the race detector. Several calls may share a request that nobody modifies. (The one
// exception: a call whose lane a hook of the host holds past Close is delivered while the hook
// may still read the request; see Close.) A request over
// Limits.MaxRequestBytes, or one that does not encode (a string field with invalid UTF-8, a
// missing required field), is never sent: the call fails with ErrTooLarge or
// ErrInvalidArgument at a later Tick, like any failure.
//
// Invalid input (a nil request, a bad timeout or metadata, a method outside Config.Methods),
// metadata over its limit, overload (MaxOutstanding reached) and a closed reactor fail the
// call at once: the promise is Failed when Call returns, and its callbacks run at the first
// Tick that starts after Call returns (never inside Call), after the outcomes that were
// already waiting for that Tick, unless its budget runs out first.
//
// What Call costs the calling goroutine is its checks, admission by one compare-and-swap, a
// clock read for the deadline, the call written into a slot of a ring that New prepared, and
// the promise, one small allocation (more for a call with metadata, a Context or
// CallOptions); Go, which has no promise, costs less. The burst suite (module benchmarks)
// measures both in a game loop against a hand-written goroutine pool.
//
// A nil r or m is a programming error and panics.
func Call[Req, Resp proto.Message](r *Reactor, m *calls.Method[Req, Resp], req Req, opts *calls.Options) *calls.Promise[Resp] {
	if r == nil {
		panic("prpc: reactor.Call with a nil *Reactor")
	}
	if m == nil {
		panic("prpc: reactor.Call with a nil *calls.Method")
	}
	p := callcore.NewPromise[Resp](&r.ownerRef)
	if err := r.submit(p, p.Pos(), (*callcore.Method[Req, Resp])(m).Ops(), req, opts); err != nil {
		p.Reject(err)
		r.deliverNext(p)
	}
	return (*calls.Promise[Resp])(p)
}

// Go submits a call of method m with request req, as Call does, with fn as its one callback
// instead of a promise: fn runs exactly once, inside a later Tick (or Shutdown, Close) on the
// goroutine that calls it, with the response and a nil error if the call succeeds, or with
// the zero response and its *calls.Error if it fails. It is the cheapest way to make a call;
// use Call for a call whose State, Err, Cancel or response metadata the caller needs.
//
// Build a fresh request for every call: Go owns req until fn runs, and a request changed
// before then may be sent with its new values, as Call explains.
//
// Go returns nil once the call is submitted. A call that Call would fail at once, Go rejects:
// it returns the *calls.Error and fn still runs with it, at the first Tick that starts after Go
// returns, so that code which only reads the callback misses nothing. It never blocks and is
// safe from any goroutine; opts may be nil.
//
// A nil r, m or fn is a programming error and panics.
func Go[Req, Resp proto.Message](r *Reactor, m *calls.Method[Req, Resp], req Req, opts *calls.Options, fn func(Resp, error)) error {
	if r == nil {
		panic("prpc: reactor.Go with a nil *Reactor")
	}
	if m == nil {
		panic("prpc: reactor.Go with a nil *calls.Method")
	}
	if fn == nil {
		panic("prpc: reactor.Go with a nil callback")
	}
	if err := r.submit(callcore.Func[Resp](fn), nil, (*callcore.Method[Req, Resp])(m).Ops(), req, opts); err != nil {
		r.deliverNext(&callcore.Rejected[Resp]{Fn: fn, Err: err})
		return err
	}
	return nil
}

// submit checks the call, admits it and hands it to the reactor goroutine with target t, or
// counts its rejection and returns it; the caller delivers a rejection to t. If pos is not nil,
// submit writes the call's submission position there first (modulo 2³²), by which a promise
// cancels it.
func (r *Reactor) submit(t callcore.Target, pos *uint32, ops *callcore.Ops, req proto.Message, opts *calls.Options) *calls.Error {
	if r.closing.Load() {
		return r.reject(ops, callerr.Closed, "reactor is closed", nil)
	}
	if req == nil || !req.ProtoReflect().IsValid() {
		return r.reject(ops, callerr.InvalidArgument, "nil request", nil)
	}
	if r.allow != nil && !r.allow[ops.Path] {
		return r.reject(ops, callerr.InvalidArgument, "method is not in Config.Methods", nil)
	}
	if opts == nil {
		opts = &noOptions
	}
	policy := &r.method(ops).policy
	timeout, extra, err := r.callOptions(ops, policy, opts)
	if err != nil {
		return err
	}
	critical := opts.Critical || policy.critical
	if !r.admit(int64(r.admissionLimit(critical))) {
		return r.reject(ops, callerr.Overloaded, r.overloaded[b2i(critical)], nil)
	}
	if r.closing.Load() { // Close began since the first look: admitted calls must not follow it
		r.withdraw(req, extra, false)
		return r.reject(ops, callerr.Closed, "reactor is closed", nil)
	}
	if r.owned != nil {
		if err := r.own(ops, req, &extra); err != nil {
			r.withdraw(req, extra, false)
			return err
		}
	}
	now := r.now()
	s, at, ok := r.subs.Reserve()
	if !ok {
		r.withdraw(req, extra, r.owned != nil)
		return r.reject(ops, callerr.Closed, "reactor closed before the call was sent", nil)
	}
	if pos != nil {
		*pos = uint32(at)
	}
	s.Target, s.Ops, s.Req, s.Extra, s.Flags = t, ops, req, extra, submitFlags(policy, opts, critical)
	s.Submitted, s.Deadline = now, now+int64(timeout)
	if !r.subs.Publish(s, at) {
		// The reactor goroutine exited between admission and now (Close won the race).
		r.withdraw(req, extra, r.owned != nil)
		return r.reject(ops, callerr.Closed, "reactor closed before the call was sent", nil)
	}
	return nil
}

// callOptions checks opts, a call's options, against the method's policy and returns the
// call's timeout and the request fields most calls do not use (nil if it has none), or the
// call's rejection.
func (r *Reactor) callOptions(ops *callcore.Ops, policy *methodPolicy, opts *calls.Options) (time.Duration, *callcore.Extra, *calls.Error) {
	timeout := policy.timeout
	switch t := opts.Timeout; {
	case t < 0:
		return 0, nil, r.reject(ops, callerr.InvalidArgument, fmt.Sprintf("negative timeout %v", t), nil)
	case t > r.cfg.MaxTimeout:
		return 0, nil, r.reject(ops, callerr.InvalidArgument, fmt.Sprintf("timeout %v is above MaxTimeout %v", t, r.cfg.MaxTimeout), nil)
	case t > 0:
		timeout = t
	}
	if opts.WaitForReady && opts.FailFast {
		return 0, nil, r.reject(ops, callerr.InvalidArgument, "Options.WaitForReady and Options.FailFast are exclusive", nil)
	}
	if len(opts.Metadata) == 0 && opts.Context == nil && len(opts.CallOptions) == 0 {
		return timeout, nil, nil
	}
	var md metadata.MD
	if len(opts.Metadata) > 0 {
		var err error
		if md, err = limitcheck.NormalizeMetadata(opts.Metadata, r.cfg.Limits.MaxMetadataBytes); err != nil {
			return 0, nil, r.rejectLimit(ops, err)
		}
	}
	return timeout, &callcore.Extra{MD: md, Parent: opts.Context, CallOpts: opts.CallOptions}, nil
}

// submitFlags returns the flags of a call with options opts of a method with policy, critical
// as the caller decided.
func submitFlags(policy *methodPolicy, opts *calls.Options, critical bool) callqueue.SubmitFlags {
	var flags callqueue.SubmitFlags
	if (opts.WaitForReady || policy.waitForReady) && !opts.FailFast {
		flags |= callqueue.SubmitWaitForReady
	}
	if opts.ResponseMetadata || policy.metadata {
		flags |= callqueue.SubmitMetadata
	}
	if critical {
		flags |= callqueue.SubmitCritical
	}
	return flags
}

// withdraw undoes the admission of a call that is not submitted after all: it frees the call's
// admission slot and, if owned, gives its request back (Config.CheckRequestOwnership). The
// caller then rejects the call.
func (r *Reactor) withdraw(req proto.Message, extra *callcore.Extra, owned bool) {
	r.admitted.Add(-1)
	if owned {
		r.disown(req, extra)
	}
}

var noOptions calls.Options

// admit takes one of the limit admission slots, unless all are taken, and reports whether it
// did. A compare-and-swap, not an add, so that a call refused at its limit never counts, even
// for a moment, against a critical call's larger one.
func (r *Reactor) admit(limit int64) bool {
	for {
		n := r.admitted.Load()
		if n >= limit {
			return false
		}
		if r.admitted.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// rejectLimit rejects the call for breaking a limit or a metadata rule.
func (r *Reactor) rejectLimit(ops *callcore.Ops, err error) *calls.Error {
	var se *limitcheck.SizeError
	if errors.As(err, &se) {
		return r.reject(ops, callerr.TooLarge, err.Error(), nil)
	}
	return r.reject(ops, callerr.InvalidArgument, err.Error(), nil)
}

// reject returns the error of a call failed at submission, counted at once; the caller (Call
// or Go) delivers it to the call's target, whose callbacks run at the first Tick that starts
// after the caller returns. A rejected call holds no admission slot and no record.
func (r *Reactor) reject(ops *callcore.Ops, kind callerr.Kind, msg string, cause error) *calls.Error {
	err := markNotSent(localError(kind, ops.Path, msg, cause))
	reason := callcore.ReasonInvalid
	switch kind {
	case callerr.Closed:
		reason = callcore.ReasonClosed
	case callerr.Overloaded:
		reason = callcore.ReasonOverloaded
	}
	method := r.method(ops)
	r.mu.Lock()
	r.counts.submit(method.counters, 1)
	r.counts.reject(method.counters, err.Code(), reason)
	r.mu.Unlock()
	return err
}

// admissionLimit returns how many calls may be admitted at most once a call is: MaxOutstanding
// for a critical call, MaxOutstanding less CriticalReserve for any other.
func (r *Reactor) admissionLimit(critical bool) int {
	if critical {
		return r.cfg.MaxOutstanding
	}
	return r.cfg.MaxOutstanding - r.cfg.CriticalReserve
}

// overloadMessage says which limit an overloaded call met, critical or not; a critical call
// that met MaxOutstanding with no reserve is told why being critical gave it no room. New makes
// both messages once (Reactor.overloaded), since they depend only on the Config.
func (r *Reactor) overloadMessage(critical bool) string {
	limit := r.admissionLimit(critical)
	switch {
	case limit < r.cfg.MaxOutstanding:
		return fmt.Sprintf("%d calls outstanding, the limit for calls that are not critical (MaxOutstanding %d less CriticalReserve %d)",
			limit, r.cfg.MaxOutstanding, r.cfg.CriticalReserve)
	case critical && r.cfg.CriticalReserve == 0:
		return fmt.Sprintf("%d calls outstanding, the MaxOutstanding limit; the call is critical, but Config.CriticalReserve is 0, "+
			"so no room is reserved for critical calls (set Config.CriticalReserve, or mark the method Critical in a MethodPolicy, "+
			"which reserves MaxOutstanding/10 by default)", limit)
	case critical:
		return fmt.Sprintf("%d calls outstanding, the MaxOutstanding limit, including the %d reserved for critical calls (Config.CriticalReserve)",
			limit, r.cfg.CriticalReserve)
	}
	return fmt.Sprintf("%d calls outstanding, the MaxOutstanding limit", limit)
}

// b2i returns 1 for true and 0 for false.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
