package reactor

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/internal/limitcheck"
)

// handleSetter is what openStream asks of a typed handle.
type handleSetter interface {
	SetOwner(callcore.StreamOwner)
	Batched() bool
}

// openStream opens a stream whose typed handle is h, with the targets of its messages and
// end, and of its reopen carrier (Watch's, for Resubscribe); req is Watch's request (nil for
// Bidi). A stream refused at open gets an owner that
// holds only its error, and its end goes to the host queue for the next Tick. An admitted one
// is registered in r's stream table, which MaxStreams bounds, and its receiving goroutine
// starts.
func (r *Reactor) openStream(h handleSetter, msgs, end, reopen callcore.Target, ops *callcore.Ops, desc *grpc.StreamDesc, req proto.Message, opts *calls.StreamOptions) {
	e := r.method(ops)
	r.countStreamOpen(e)
	s, err := r.newStream(ops, req, desc.ClientStreams, opts)
	if err != nil {
		h.SetOwner(&refusedStream{err: markNotSent(err), r: r, entry: e})
		r.deliverNext(end)
		return
	}
	s.msgs, s.end, s.desc, s.entry = msgs, end, desc, e
	s.runs = h.Batched() && !s.keepLatest
	s.endCarrier.Target, s.endCarrier.Ops = end, ops
	h.SetOwner(s)
	if err := r.streams.add(s); err != nil {
		s.stopParentWatch()
		h.SetOwner(&refusedStream{err: markNotSent(err), r: r, entry: e})
		r.deliverNext(end)
		return
	}
	if s.resub != nil {
		s.resub.carrier.Target, s.resub.carrier.Ops = reopen, ops
	}
	if s.timeout > 0 {
		r.dueStreams.schedule(streamDue{at: s.opened + int64(s.timeout), s: s})
	}
	go s.run()
}

// newStream checks a stream's input and returns its state, or the error it is refused with.
func (r *Reactor) newStream(ops *callcore.Ops, req proto.Message, bidi bool, opts *calls.StreamOptions) (*stream, *calls.Error) {
	if r.closing.Load() {
		return nil, localError(callerr.Closed, ops.Path, "reactor is closed", nil)
	}
	if !bidi && (req == nil || !req.ProtoReflect().IsValid()) {
		return nil, localError(callerr.InvalidArgument, ops.Path, "nil request", nil)
	}
	if r.allow != nil && !r.allow[ops.Path] {
		return nil, localError(callerr.InvalidArgument, ops.Path, "method is not in Config.Methods", nil)
	}
	if opts == nil {
		opts = &noStreamOptions
	}
	maxWaiting, err := streamBound(ops, "MaxWaiting", opts.MaxWaiting, calls.MaxMaxWaiting, calls.DefaultMaxWaiting)
	if err != nil {
		return nil, err
	}
	maxSend, err := streamBound(ops, "MaxSendQueue", opts.MaxSendQueue, calls.MaxMaxSendQueue, calls.DefaultMaxSendQueue)
	if err != nil {
		return nil, err
	}
	if opts.Timeout < 0 {
		return nil, localError(callerr.InvalidArgument, ops.Path, fmt.Sprintf("StreamOptions.Timeout %v must not be negative (0 means none)", opts.Timeout), nil)
	}
	if bidi && opts.Resubscribe != nil {
		return nil, localError(callerr.InvalidArgument, ops.Path,
			"StreamOptions.Resubscribe is for Watch only: a Bidi stream's OnEnd opens a new one and sends Unsent again", nil)
	}
	resub, err := resolveResubscribe(ops, opts.Resubscribe)
	if err != nil {
		return nil, err
	}
	var md metadata.MD
	if len(opts.Metadata) > 0 {
		var err error
		if md, err = limitcheck.NormalizeMetadata(opts.Metadata, r.cfg.Limits.MaxMetadataBytes); err != nil {
			return nil, limitError(ops, err)
		}
	}
	if opts.KeepLatest {
		maxWaiting = 1
	}
	s := &stream{
		r: r, ops: ops, req: req, bidi: bidi,
		keepLatest: opts.KeepLatest, maxWaiting: maxWaiting, meta: opts.ResponseMetadata,
		ring:    make([]*callcore.Call, maxWaiting),
		wake:    make(chan struct{}, 1),
		codec:   lanecodec.New(r.cfg.Limits),
		timeout: opts.Timeout, resub: resub,
	}
	if s.timeout > 0 {
		s.opened = r.now()
	}
	s.opts = r.streamCallOptions(s, opts)
	parent := orBackground(opts.Context)
	if md != nil {
		parent = metadata.NewOutgoingContext(parent, md)
	}
	s.ctx = &streamCtx{parent: parent}
	if bidi {
		s.sendMax = maxSend
		s.sendq = make(chan sendItem, maxSend+1)
		s.senderDone = make(chan struct{})
	}
	if p := opts.Context; p != nil && p.Done() != nil {
		s.stopParent = context.AfterFunc(p, func() { s.fail(parentCause(ops, p.Err())) })
	}
	return s, nil
}

var noStreamOptions calls.StreamOptions

// limitError is the error of a stream refused for breaking a limit or a metadata rule.
func limitError(ops *callcore.Ops, err error) *calls.Error {
	var se *limitcheck.SizeError
	if errors.As(err, &se) {
		return localError(callerr.TooLarge, ops.Path, err.Error(), nil)
	}
	return localError(callerr.InvalidArgument, ops.Path, err.Error(), nil)
}

// streamBound checks a bound of StreamOptions and returns it, its default for zero.
func streamBound(ops *callcore.Ops, field string, v, most, deflt int) (int, *calls.Error) {
	switch {
	case v == 0:
		return deflt, nil
	case v < 0 || v > most:
		return 0, localError(callerr.InvalidArgument, ops.Path,
			fmt.Sprintf("StreamOptions.%s %d must be between 1 and %d (0 means the default, %d)", field, v, most, deflt), nil)
	}
	return v, nil
}

// streamCallOptions returns the call options of s's transport stream: the user's first, then
// wait-for-ready, the stream's codec, prpc's limits (after the user's, so that none raises
// them), and the peer, by which an end tells whether gRPC gave the stream a transport stream.
func (r *Reactor) streamCallOptions(s *stream, opts *calls.StreamOptions) []grpc.CallOption {
	out := make([]grpc.CallOption, 0, len(opts.CallOptions)+len(r.baseOpts)+3)
	out = append(out, opts.CallOptions...)
	if opts.WaitForReady {
		out = append(out, grpc.WaitForReady(true))
	}
	out = append(out, grpc.ForceCodecV2(s.codec))
	out = append(out, r.baseOpts...)
	return append(out, grpc.Peer(&s.peer))
}

// parentCause is the cause of a stream's end when its parent context ended with err.
func parentCause(ops *callcore.Ops, err error) *calls.Error {
	if err == context.DeadlineExceeded {
		return localError(callerr.Timeout, ops.Path, "deadline of the parent context exceeded", err)
	}
	return localError(callerr.Cancelled, ops.Path, "parent context done: "+fmt.Sprint(err), err)
}

// streamTable holds the streams opened and whose end Tick has not delivered yet, which
// MaxStreams bounds, and counts their receiving goroutines, which Close waits for.
type streamTable struct {
	mu      sync.Mutex
	r       *Reactor
	live    map[*stream]struct{}
	running int           // receiving goroutines not yet exited
	closed  bool          // Close has begun: no stream opens any more
	exited  chan struct{} // closed once closed is set and running is zero
	// winding counts the streams stopped or whose end is decided, and whose end Tick has not
	// delivered yet: Idle is false while there is one. Written under mu.
	winding atomic.Int64
}

// add registers s and counts its receiving goroutine, or returns why it is refused: Close
// has begun, or MaxStreams streams are open.
func (t *streamTable) add(s *stream) *calls.Error {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.closed:
		return localError(callerr.Closed, s.ops.Path, "reactor is closed", nil)
	case len(t.live) >= t.r.cfg.MaxStreams:
		return localError(callerr.Overloaded, s.ops.Path,
			fmt.Sprintf("%d streams open, the Config.MaxStreams limit", t.r.cfg.MaxStreams), nil)
	}
	if t.live == nil {
		t.live = make(map[*stream]struct{})
	}
	t.live[s] = struct{}{}
	t.running++
	return nil
}

// exit counts the exit of a stream's receiving goroutine.
func (t *streamTable) exit() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.running--
	if t.closed && t.running == 0 {
		close(t.exited)
	}
}

// wind counts s, which has just been stopped or had its end decided, among the winding
// streams, once.
func (t *streamTable) wind(s *stream) {
	t.mu.Lock()
	if _, ok := t.live[s]; ok && !s.wound {
		s.wound = true
		t.winding.Add(1)
	}
	t.mu.Unlock()
}

// remove forgets s, whose end Tick is delivering.
func (t *streamTable) remove(s *stream) {
	t.mu.Lock()
	if _, ok := t.live[s]; ok {
		delete(t.live, s)
		if s.wound {
			t.winding.Add(-1)
		}
	}
	t.mu.Unlock()
}

// stopAll stops every open stream with ErrClosed; with closing set, it also refuses every
// later open and returns the channel closed once every receiving goroutine has exited.
func (t *streamTable) stopAll(closing bool) <-chan struct{} {
	t.mu.Lock()
	if closing && !t.closed {
		t.closed = true
		t.exited = make(chan struct{})
		if t.running == 0 {
			close(t.exited)
		}
	}
	streams := make([]*stream, 0, len(t.live))
	for s := range t.live {
		streams = append(streams, s)
	}
	exited := t.exited
	t.mu.Unlock()
	for _, s := range streams {
		s.stop(localError(callerr.Closed, s.ops.Path, "streams closed (CloseStreams, Shutdown or Close)", nil))
	}
	return exited
}

// abandon claims the end of every stream whose receiving goroutine has not exited (a hook of
// the host holds it) and queues it for Tick, and returns how many it claimed.
func (t *streamTable) abandon() int {
	t.mu.Lock()
	streams := make([]*stream, 0, len(t.live))
	for s := range t.live {
		streams = append(streams, s)
	}
	t.mu.Unlock()
	n := 0
	for _, s := range streams {
		if s.claimEnd(nil, true, true) {
			n++
		}
	}
	return n
}
