package reactor

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/limits"
)

// Call submits a call of method m with request req and returns its promise at once. It never
// blocks and does no network I/O; it is safe from any goroutine. opts may be nil. What it costs
// the calling goroutine is the request's encoding into the buffer of a reused call record, one
// small allocation for the promise (more for a call with metadata, a Context or
// CallOptions), and three short mutex holds that prpc's own goroutines do not share;
// BenchmarkHostCostBurst (module benchmarks) measures it in a burst.
//
// The request is encoded before Call returns, so later changes to req change nothing sent.
// Invalid input (a nil request, a bad timeout or metadata, a method outside Config.Methods), a
// request or metadata over its limit, overload (MaxOutstanding reached) and a closed reactor
// all fail the call at once: the promise is Failed when Call returns, and its callbacks run at
// the first Tick that starts after Call returns (never inside Call), after the outcomes that
// were already waiting for that Tick, unless its budget runs out first.
//
// A nil r or m is a programming error and panics.
func Call[Req, Resp proto.Message](r *Reactor, m *calls.Method[Req, Resp], req Req, opts *calls.Options) *calls.Promise[Resp] {
	if r == nil {
		panic("prpc: reactor.Call with a nil *Reactor")
	}
	if m == nil {
		panic("prpc: reactor.Call with a nil *calls.Method")
	}
	p := callcore.NewPromise[Resp](&r.owner)
	r.submit(p, (*callcore.Method[Req, Resp])(m).Ops(), req, opts)
	return (*calls.Promise[Resp])(p)
}

// submit validates and encodes the call, and admits it with a record bound to p, or rejects
// it.
func (r *Reactor) submit(p callcore.Handle, ops *callcore.Ops, req proto.Message, opts *calls.Options) {
	if r.closingA.Load() {
		r.reject(p, ops, callerr.Closed, "reactor is closed", nil)
		return
	}
	if req == nil || !req.ProtoReflect().IsValid() {
		r.reject(p, ops, callerr.InvalidArgument, "nil request", nil)
		return
	}
	if r.allow != nil && !r.allow[ops.Path] {
		r.reject(p, ops, callerr.InvalidArgument, "method is not in Config.Methods", nil)
		return
	}
	if opts == nil {
		opts = &noOptions
	}
	method := r.method(ops)
	policy := method.policy
	timeout := policy.timeout
	switch t := opts.Timeout; {
	case t < 0:
		r.reject(p, ops, callerr.InvalidArgument, fmt.Sprintf("negative timeout %v", t), nil)
		return
	case t > r.cfg.MaxTimeout:
		r.reject(p, ops, callerr.InvalidArgument, fmt.Sprintf("timeout %v is above MaxTimeout %v", t, r.cfg.MaxTimeout), nil)
		return
	case t > 0:
		timeout = t
	}
	if opts.WaitForReady && opts.FailFast {
		r.reject(p, ops, callerr.InvalidArgument, "Options.WaitForReady and Options.FailFast are exclusive", nil)
		return
	}
	var md metadata.MD
	if len(opts.Metadata) > 0 {
		var err error
		if md, err = limits.NormalizeMetadata(opts.Metadata, r.cfg.Limits.MaxMetadataBytes); err != nil {
			r.rejectLimit(p, ops, err)
			return
		}
	}
	critical := opts.Critical || policy.critical
	limit := r.cfg.MaxOutstanding
	if !critical {
		limit -= r.cfg.CriticalReserve
	}
	// Admission and a free record under one hold of mu, then the encoding, into the record's
	// buffer. Encoding first and checking the size after costs less than sizing the request
	// first, which encoding would do again for all but the outer message.
	r.mu.Lock()
	switch {
	case r.closing:
		r.mu.Unlock()
		r.reject(p, ops, callerr.Closed, "reactor is closed", nil)
		return
	case r.counts.pending >= limit:
		r.mu.Unlock()
		r.reject(p, ops, callerr.Overloaded, r.overloadMessage(limit, critical), nil)
		return
	}
	r.counts.pending++
	r.counts.submit(method.counters)
	c := r.records.get()
	r.mu.Unlock()
	buf, err := ops.Encode.Append(c.Request, req)
	c.Request = buf
	if err == nil {
		err = r.cfg.Limits.CheckRequest(len(buf))
	}
	if err != nil {
		r.unadmit(c, method)
		if _, tooLarge := err.(*limits.SizeError); tooLarge {
			r.rejectLimit(p, ops, err)
		} else {
			r.reject(p, ops, callerr.InvalidArgument, "encoding the request: "+err.Error(), err)
		}
		return
	}

	c.Ops = ops
	c.Submitted = r.now()
	c.Deadline = c.Submitted + int64(timeout)
	if md != nil || opts.Context != nil || len(opts.CallOptions) > 0 {
		c.Extra = &callcore.Extra{MD: md, Parent: opts.Context, CallOpts: opts.CallOptions}
	}
	c.WaitForReady = (opts.WaitForReady || policy.waitForReady) && !opts.FailFast
	c.Metadata = opts.ResponseMetadata || policy.metadata
	c.Admitted = true
	gen := c.Gen()
	p.Bind(c, gen)
	if !r.in.push(event{kind: evSubmit, gen: gen, c: c}) {
		// The reactor goroutine exited between admission and now (Close won the race).
		c.Move(gen, callcore.Unclaimed, callcore.Dropped)
		c.Err = localError(callerr.Closed, ops.Path, "reactor closed before the call was sent", nil)
		c.Reason = callcore.ReasonClosed
		r.deliverNext(p)
	}
}

var noOptions calls.Options

// unadmit undoes the admission of a call whose request could not be sent, before it is
// rejected (and counted again, as a rejection), and keeps its record, unused.
func (r *Reactor) unadmit(c *callcore.Call, method *methodEntry) {
	r.mu.Lock()
	r.counts.pending--
	r.counts.unsubmit(method.counters)
	r.records.put(c)
	r.mu.Unlock()
}

// rejectLimit rejects the call for breaking a limit or a metadata rule.
func (r *Reactor) rejectLimit(p callcore.Handle, ops *callcore.Ops, err error) {
	var se *limits.SizeError
	if errors.As(err, &se) {
		r.reject(p, ops, callerr.TooLarge, err.Error(), nil)
		return
	}
	r.reject(p, ops, callerr.InvalidArgument, err.Error(), nil)
}

// reject fails the call at submission: the failure is visible at once, counted at once, and
// the callbacks run at the first Tick that starts after Call returns. A rejected call holds
// no admission slot and no record.
func (r *Reactor) reject(p callcore.Handle, ops *callcore.Ops, kind callerr.Kind, msg string, cause error) {
	err := localError(kind, ops.Path, msg, cause)
	reason := callcore.ReasonInvalid
	switch kind {
	case callerr.Closed:
		reason = callcore.ReasonClosed
	case callerr.Overloaded:
		reason = callcore.ReasonOverloaded
	}
	method := r.method(ops)
	r.mu.Lock()
	r.counts.submit(method.counters)
	r.counts.fail(method.counters, err.Code(), reason, -1)
	r.mu.Unlock()
	p.Reject(err)
	r.deliverNext(p)
}

// overloadMessage says which limit an overloaded call met. A critical call that met
// MaxOutstanding with no reserve is told why being critical gave it no room.
func (r *Reactor) overloadMessage(limit int, critical bool) string {
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
