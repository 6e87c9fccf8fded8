package reactortest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/memconn"
)

// route is what serves a method on a Backend: a unary handler, or a stream's.
type route struct {
	unary  handlerFunc
	stream *streamRoute
}

// streamRoute serves a streaming method: run is its handler, as grpc.Server runs a
// grpc.StreamHandler, and clientStreams says whether it takes any number of requests (a
// client-streaming or bidirectional method) or exactly one (a server-streaming method).
type streamRoute struct {
	clientStreams bool
	run           func(ss *handlerStream) error
}

// unaryDesc describes a unary method, as grpc-go's Invoke opens its stream.
var unaryDesc = grpc.StreamDesc{}

// HandleStream registers fn as the handler of the server-streaming method m on b, replacing
// any earlier handler of its path (Handle's, HandleStream's or HandleBidi's), and
// taking precedence over a service registered with RegisterService that has the method.
// Each stream runs fn on a goroutine of its own, with the stream's one request, once the
// client has sent it and closed its side, as the handler protoc-gen-go-grpc generates
// receives it; send sends a message to the client, and blocks while the stream's window is
// full (see Backend). What fn returns ends the stream with its status, as Backend says of a
// handler's error: nil ends it OK.
func HandleStream[Req, Resp proto.Message](b *Backend, m *calls.StreamMethod[Req, Resp], fn func(ctx context.Context, req Req, send func(Resp) error) error) {
	newReq := requestMaker[Req]()
	b.setHandler(m.Path(), route{stream: &streamRoute{run: func(ss *handlerStream) error {
		req := newReq()
		if err := ss.RecvMsg(req); err != nil {
			return err
		}
		return fn(ss.ctx, req, func(resp Resp) error { return ss.SendMsg(resp) })
	}}})
}

// HandleBidi registers fn as the handler of the bidirectional or client-streaming method m
// on b, replacing any earlier handler of its path and taking precedence over a registered
// service's, as HandleStream does. Each stream runs fn on a goroutine of its own: recv
// returns the client's requests in order, then io.EOF once the client has closed its side
// (CloseSend), or the stream's status error once the client has gone; send sends a message
// to the client, and blocks while the stream's window is full. A client-streaming method's
// handler sends its one response before it returns nil. What fn returns ends the stream with
// its status, as for HandleStream.
func HandleBidi[Req, Resp proto.Message](b *Backend, m *calls.BidiMethod[Req, Resp], fn func(ctx context.Context, recv func() (Req, error), send func(Resp) error) error) {
	newReq := requestMaker[Req]()
	b.setHandler(m.Path(), route{stream: &streamRoute{clientStreams: true, run: func(ss *handlerStream) error {
		recv := func() (Req, error) {
			req := newReq()
			if err := ss.RecvMsg(req); err != nil {
				var zero Req
				return zero, err
			}
			return req, nil
		}
		return fn(ss.ctx, recv, func(resp Resp) error { return ss.SendMsg(resp) })
	}}})
}

// requestMaker returns a func that makes an empty request of a stream handler's type: a
// generated message type, as the method's descriptor checked.
func requestMaker[Req proto.Message]() func() Req {
	var zero Req
	reqType := zero.ProtoReflect().Type()
	return func() Req { return reqType.New().Interface().(Req) }
}

// Streams returns how many streams of the method at path were opened on b (NewStream),
// served or not.
func (b *Backend) Streams(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.streams[path]
}

// Stalls returns how many times a handler of a stream of the method at path, sending a
// message, found the stream's window full and waited for the client to read. A stall that
// has begun lasts until the client reads, or the stream ends.
func (b *Backend) Stalls(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stalls[path]
}

// WaitStalls waits until Stalls(path) is at least n, and returns nil, or until ctx is done,
// and returns an error that wraps ctx.Err() and says how many there were. It wakes at each
// stall, without polling: a test that does not read a stream waits so until its handler is
// blocked in a send. A nil ctx panics.
func (b *Backend) WaitStalls(ctx context.Context, path string, n int) error {
	if ctx == nil {
		panic("reactortest: Backend.WaitStalls with a nil context.Context")
	}
	for {
		b.mu.Lock()
		got, changed := b.stalls[path], b.changed
		b.mu.Unlock()
		if got >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("reactortest: Backend.WaitStalls(%q, %d): %d stalls: %w", path, n, got, ctx.Err())
		}
	}
}

// SetStreamWindow sets how many bytes of encoded messages each direction of a stream opened
// on b from now on holds unread (DefaultStreamWindow until it is called), each message
// counting its length plus gRPC's 5-byte prefix: a send waits while the messages the other
// side has not read leave no room for its message, unless none waits. A window of 1 holds
// one message at a time. A bytes below 1 panics.
func (b *Backend) SetStreamWindow(bytes int) {
	if bytes < 1 {
		panic(fmt.Sprintf("reactortest: Backend.SetStreamWindow(%d): the window must be at least 1 byte", bytes))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.window = bytes
}

// NewStream implements grpc.ClientConnInterface: it opens a stream of the method at path
// and returns its client's end at once, without waiting for the handler, as grpc-go does
// once its transport stream is open. The handler runs on a goroutine of its own, as Backend
// describes; see Backend for what it sees and what the client sees. A method that b does not
// serve ends the stream with Unimplemented, which RecvMsg returns. A ctx done already fails
// NewStream with its status (Canceled or DeadlineExceeded). desc says what the client
// sends and receives, as in grpc-go: one request or many, one response or many. A nil desc
// panics.
func (b *Backend) NewStream(ctx context.Context, desc *grpc.StreamDesc, method string, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if desc == nil {
		panic("reactortest: Backend.NewStream with a nil *grpc.StreamDesc")
	}
	b.mu.Lock()
	rt, ok := b.routeLocked(method)
	b.streams[method]++
	window := b.window
	b.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, status.FromContextError(err).Err()
	}
	var sr *streamRoute
	switch {
	case !ok:
		sr = &streamRoute{clientStreams: true, run: func(*handlerStream) error {
			return status.Errorf(codes.Unimplemented, "unknown method %s", method)
		}}
	case rt.stream != nil:
		sr = rt.stream
	default:
		sr = unaryOverStream(rt.unary)
	}
	return b.open(ctx, desc, method, sr, window, opts), nil
}

// unaryOverStream serves a unary handler on a stream, as grpc.Server serves a unary method
// whatever the client opened: it takes the one request, and sends the one response.
func unaryOverStream(h handlerFunc) *streamRoute {
	return &streamRoute{run: func(ss *handlerStream) error {
		raw, err := ss.recvRaw()
		if err != nil {
			return err
		}
		resp, err := h(ss.ctx, raw)
		if err != nil {
			return err
		}
		return ss.SendMsg(resp)
	}}
}

// invokeStream runs an attempt of a unary call (Invoke) of a streaming method, as grpc-go
// runs it and a gRPC server serves it: the stream's handler gets req, and the call the one
// response. A second response fails the call with Internal, as in grpc-go. Unlike a stream
// opened with NewStream, it counts in Calls, not in Streams.
func (b *Backend) invokeStream(ctx context.Context, method string, sr *streamRoute, req []byte, out proto.Message, opts []grpc.CallOption) attempt {
	if err := ctx.Err(); err != nil {
		return attempt{err: status.FromContextError(err).Err()}
	}
	b.mu.Lock()
	window := b.window
	b.mu.Unlock()
	cs := b.open(ctx, &unaryDesc, method, sr, window, opts)
	cs.sendRaw(req)
	err := cs.RecvMsg(out)
	if err == nil && ctx.Err() != nil { // the caller gave up meanwhile
		err = status.FromContextError(ctx.Err()).Err()
	}
	s := cs.s
	header := s.transport.sentHeader()
	return attempt{err: err, header: header, trailer: cs.Trailer(), committed: header != nil}
}

// stream is one stream on a Backend: its two pipes, the server side's header and trailer,
// and, once the handler has returned, its end.
type stream struct {
	reqs, resps *pipe
	transport   *serverStream
	hcancel     context.CancelFunc // ends the handler's context, as the client's RST_STREAM does

	ended      chan struct{} // closed once the handler has returned and the fields below are set
	status     error         // the handler's status: nil for OK
	panicValue any           // what the handler panicked with, or nil
	cutOff     bool          // the handler's deadline passed: the client never sees its end
}

// open starts the handler sr of a stream of method, whose client's context is ctx, and
// returns the client's end.
func (b *Backend) open(ctx context.Context, desc *grpc.StreamDesc, method string, sr *streamRoute, window int, opts []grpc.CallOption) *clientStream {
	onStall := func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.stalls[method]++
		close(b.changed)
		b.changed = make(chan struct{})
	}
	s := &stream{
		reqs:      newPipe(window, nil),
		resps:     newPipe(window, onStall),
		transport: &serverStream{method: method, headerOut: make(chan struct{})},
		ended:     make(chan struct{}),
	}
	cctx, ccancel := context.WithCancel(ctx)
	cs := &clientStream{s: s, ctx: cctx, cancel: ccancel, parent: ctx, desc: *desc, opts: opts}
	base, deadline, release := handlerBase(ctx)
	if deadline != nil && deadline.Err() != nil {
		// A server does not run a handler whose deadline has passed; the stream ends when
		// the client's context does, as the reactor that times it out on the same clock
		// ends it.
		release()
		s.hcancel = func() {}
		s.end(nil, nil, true)
		return cs
	}
	hctx, hcancel := context.WithCancel(grpc.NewContextWithServerTransportStream(metadata.NewIncomingContext(base, incoming(ctx, opts)), s.transport))
	s.hcancel = hcancel
	ss := &handlerStream{s: s, ctx: hctx, clientStreams: sr.clientStreams}
	go func() {
		p, err := runStream(sr, ss)
		s.end(err, p, deadline != nil && errors.Is(deadline.Err(), context.DeadlineExceeded))
		hcancel()
		release()
	}()
	return cs
}

// runStream runs sr's handler, and returns the value it panicked with, or its error.
func runStream(sr *streamRoute, ss *handlerStream) (panicValue any, err error) {
	defer func() {
		if p := recover(); p != nil {
			panicValue, err = p, nil
		}
	}()
	return nil, sr.run(ss)
}

// end records the end of s's handler, which returned err or panicked with p, after its
// deadline if late, and delivers it behind the messages it sent.
func (s *stream) end(err error, p any, late bool) {
	if late {
		s.transport.abandon()
	} else {
		s.transport.finish(false)
	}
	s.status, s.panicValue, s.cutOff = handlerStatus(err), p, late
	close(s.ended)
	s.resps.close()   // the client reads the end after the messages
	s.reqs.breakOff() // the client's sends fail from now on
}

// handlerStatus returns the status of a handler's error, as grpc.Server sends it: a status
// error as it is, a context error with its code, any other error as Unknown; nil for nil.
func handlerStatus(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := status.FromError(err); ok {
		return err
	}
	return status.FromContextError(err).Err()
}

// clientStream is the client's end of a stream on a Backend: the grpc.ClientStream that
// NewStream returns, with grpc-go's semantics (see Backend).
type clientStream struct {
	s      *stream
	ctx    context.Context // Context: the client's, ended once the stream has finished
	cancel context.CancelFunc
	parent context.Context // the client's context, as NewStream got it
	desc   grpc.StreamDesc
	opts   []grpc.CallOption

	mu       sync.Mutex
	sentLast bool  // CloseSend, or the one request of a method without client streams
	received bool  // a response was received
	err      error // once the stream has finished: what RecvMsg returns from then on
}

var _ grpc.ClientStream = (*clientStream)(nil)

// Header returns the header the handler sent, once it is sent: by grpc.SendHeader, with the
// stream's first message, or with its status when one was set. It waits until then, or
// until the stream ends or its context is done; it returns nil then if no header went out.
// Its error is always nil, as grpc-go's: RecvMsg returns the stream's.
func (cs *clientStream) Header() (metadata.MD, error) {
	s := cs.s
	select {
	case <-s.transport.headerOut:
	case <-s.ended:
		if s.cutOff { // the client waits for its own deadline
			select {
			case <-s.transport.headerOut:
			case <-cs.ctx.Done():
			}
		}
	case <-cs.ctx.Done():
	}
	return s.transport.sentHeader(), nil
}

// Trailer returns the trailer the handler set, once the stream has ended; nil before, and
// for a stream cut off at its deadline.
func (cs *clientStream) Trailer() metadata.MD {
	select {
	case <-cs.s.ended:
		if !cs.s.cutOff {
			return cs.s.transport.finalTrailer()
		}
	default:
	}
	return nil
}

// CloseSend closes the client's side: the handler receives io.EOF after the requests sent
// before. It always returns nil, and may be called more than once.
func (cs *clientStream) CloseSend() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.sentLast {
		cs.sentLast = true
		cs.s.reqs.close()
	}
	return nil
}

// Context returns the stream's context: the client's, ended once the stream has finished
// (RecvMsg returned an error) or a send failed.
func (cs *clientStream) Context() context.Context { return cs.ctx }

// SendMsg encodes m with the call's codec (grpc.ForceCodecV2, else proto) and sends it,
// waiting while the stream's window is full. As in grpc-go, it fails with Internal after
// CloseSend (or after the one request of a method without client streams), with Internal
// if m does not encode and with ResourceExhausted above grpc.MaxCallSendMsgSize, which
// both end the stream; and with io.EOF once the stream has ended or its context is done,
// RecvMsg then returning the stream's status.
func (cs *clientStream) SendMsg(m any) error {
	cs.mu.Lock()
	if cs.sentLast {
		cs.mu.Unlock()
		return status.Error(codes.Internal, "SendMsg called after CloseSend")
	}
	if !cs.desc.ClientStreams {
		cs.sentLast = true
	}
	cs.mu.Unlock()
	raw, err := memconn.Encode(m, cs.opts)
	if err == nil {
		if l, ok := memconn.LastOption[grpc.MaxSendMsgSizeCallOption](cs.opts); ok && len(raw) > l.MaxSendMsgSize {
			err = status.Errorf(codes.ResourceExhausted, "trying to send message larger than max (%d vs. %d)", len(raw), l.MaxSendMsgSize)
		}
	}
	if err != nil {
		cs.finish(err)
		return err
	}
	return cs.sendRaw(raw)
}

// sendRaw sends raw, an encoded request, as SendMsg does.
func (cs *clientStream) sendRaw(raw []byte) error {
	if err := cs.s.reqs.put(cs.ctx.Done(), raw); err != nil {
		return io.EOF
	}
	if !cs.desc.ClientStreams {
		cs.s.reqs.close()
	}
	return nil
}

// RecvMsg receives the next response into m, decoded with the call's codec. It returns io.EOF
// once the stream has ended OK and every response has been received, or the stream's status
// error: the handler's, Unimplemented for a method b does not serve, the context's
// (Canceled, DeadlineExceeded) once the client's context is done, ResourceExhausted for a
// response above grpc.MaxCallRecvMsgSize, Internal for one that does not decode, which both
// end the stream, as in grpc-go. From then on it returns the same error. For a method
// without server streams (desc.ServerStreams false), it receives the one response and the
// end together, as grpc-go does: another response fails with Internal. A handler's panic is
// raised again by the RecvMsg that reaches the stream's end, after the responses sent
// before it; the stream is finished with Internal.
func (cs *clientStream) RecvMsg(m any) error {
	err := cs.recv(m)
	if err != nil || cs.desc.ServerStreams {
		return err
	}
	switch err := cs.recv(m); err {
	case io.EOF:
		return nil
	case nil:
		err = status.Error(codes.Internal, "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message")
		cs.finish(err)
		return err
	default:
		return err
	}
}

// recv receives the next response into m, or the end, as grpc-go's clientStream.RecvMsg.
func (cs *clientStream) recv(m any) error {
	if err := cs.finished(); err != nil {
		return err
	}
	s := cs.s
	raw, err := s.resps.get(cs.ctx.Done())
	switch {
	case err == errPipeDone:
		if err := cs.finished(); err != nil { // a failed send finished it
			return err
		}
		return cs.finish(status.FromContextError(cs.parent.Err()).Err())
	case err != nil: // io.EOF: the handler's end, or a failed send's breaking the pipe
		if err := cs.finished(); err != nil {
			return err
		}
		switch {
		case s.panicValue != nil:
			cs.finish(status.Errorf(codes.Internal, "reactortest: the handler of %s panicked: %v", s.transport.method, s.panicValue))
			panic(s.panicValue) // on the client's goroutine, as a unary handler's on the lane
		case s.cutOff:
			<-cs.ctx.Done()
			if err := cs.finished(); err != nil {
				return err
			}
			return cs.finish(status.FromContextError(cs.parent.Err()).Err())
		case s.status != nil:
			return cs.finish(s.status)
		case !cs.desc.ServerStreams && !cs.received:
			return cs.finish(status.Error(codes.Internal, "cardinality violation: received no response message from non-server-streaming RPC"))
		}
		return cs.finish(io.EOF)
	}
	if limit := recvLimit(cs.opts); limit >= 0 && len(raw) > limit {
		return cs.finish(status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", len(raw), limit))
	}
	if err := memconn.Decode(raw, m, cs.opts); err != nil {
		return cs.finish(err)
	}
	cs.received = true
	return nil
}

// finished returns the error the stream finished with, or nil while it goes on.
func (cs *clientStream) finished() error {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	return cs.err
}

// finish finishes the stream with err, unless it has finished already, and returns the
// error it finished with. As grpc-go's client does, it ends the stream's context and, with
// an RST_STREAM, the handler's, whose sends fail from then on.
func (cs *clientStream) finish(err error) error {
	cs.mu.Lock()
	if cs.err == nil {
		cs.err = err
	}
	err = cs.err
	cs.mu.Unlock()
	cs.cancel()
	cs.s.hcancel()
	cs.s.resps.breakOff()
	return err
}

// handlerStream is the handler's end of a stream on a Backend: the grpc.ServerStream its
// handler gets, with grpc-go's server semantics.
type handlerStream struct {
	s             *stream
	ctx           context.Context
	clientStreams bool // the method takes any number of requests, else exactly one
	received      bool // a request was received
}

var _ grpc.ServerStream = (*handlerStream)(nil)

// SetHeader implements grpc.ServerStream, as grpc.SetHeader does.
func (ss *handlerStream) SetHeader(md metadata.MD) error { return ss.s.transport.SetHeader(md) }

// SendHeader implements grpc.ServerStream, as grpc.SendHeader does.
func (ss *handlerStream) SendHeader(md metadata.MD) error { return ss.s.transport.SendHeader(md) }

// SetTrailer implements grpc.ServerStream, as grpc.SetTrailer does.
func (ss *handlerStream) SetTrailer(md metadata.MD) { _ = ss.s.transport.SetTrailer(md) }

// Context implements grpc.ServerStream: the handler's context.
func (ss *handlerStream) Context() context.Context { return ss.ctx }

// SendMsg implements grpc.ServerStream: it sends m, a proto.Message, after the header if it
// has not gone out, waiting while the stream's window is full. It fails with the context's
// status once the client has gone or the deadline passed.
func (ss *handlerStream) SendMsg(m any) error {
	msg, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "reactortest: the handler of %s sent %T, not a proto.Message", ss.s.transport.method, m)
	}
	raw, err := proto.Marshal(msg)
	if err != nil {
		return status.Errorf(codes.Internal, "reactortest: encoding the response: %v", err)
	}
	if err := ss.s.transport.sendWithMessage(); err != nil {
		return err
	}
	if err := ss.s.resps.put(ss.ctx.Done(), raw); err != nil {
		return ss.gone()
	}
	return nil
}

// gone returns the error of a send or receive once the client has gone.
func (ss *handlerStream) gone() error {
	if err := ss.ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	return status.Error(codes.Canceled, "reactortest: the client has ended the stream")
}

// RecvMsg implements grpc.ServerStream: it receives the next request into m, a
// proto.Message, and returns io.EOF once the client has closed its side and every request
// has been received. For a server-streaming method it takes the one request and the
// client's close together, as grpc.Server does, and fails with Internal otherwise.
func (ss *handlerStream) RecvMsg(m any) error {
	msg, ok := m.(proto.Message)
	if !ok {
		return status.Errorf(codes.Internal, "reactortest: decoding the request: %T is not a proto.Message", m)
	}
	raw, err := ss.recvRaw()
	if err != nil {
		return err
	}
	return decodeRequest(raw, msg)
}

// recvRaw receives the next request's bytes, as RecvMsg does.
func (ss *handlerStream) recvRaw() ([]byte, error) {
	raw, err := ss.s.reqs.get(ss.ctx.Done())
	switch {
	case err == io.EOF:
		if !ss.clientStreams && !ss.received {
			return nil, status.Error(codes.Internal, "cardinality violation: received no request message from non-client-streaming RPC")
		}
		return nil, io.EOF
	case err != nil:
		return nil, ss.gone()
	}
	ss.received = true
	if ss.clientStreams {
		return raw, nil
	}
	switch _, err := ss.s.reqs.get(ss.ctx.Done()); {
	case err == io.EOF:
		return raw, nil
	case err != nil:
		return nil, ss.gone()
	}
	return nil, status.Error(codes.Internal, "cardinality violation: received multiple request messages for non-client-streaming RPC")
}
