package reactortest

import (
	"context"
	"errors"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/memconn"
	"github.com/trixnew/prpc/internal/standin"
)

// Backend is an in-memory gRPC backend: a grpc.ClientConnInterface to pass as
// reactor.Config.Conn, whose methods are Go funcs registered with Handle (unary),
// HandleStream (server-streaming) or HandleBidi (bidirectional and client-streaming), or the
// methods of a service implementation registered as on a grpc.Server (RegisterService, which
// makes a Backend a grpc.ServiceRegistrar for the generated pb.RegisterXServer functions).
// Calls go through the same codec, limits and reactor machinery as on a network, without one.
//
// A handler (a Handle func, or a method of a registered service) runs on a goroutine of its
// own while the invoker lane that runs the call waits for it, as a lane waits for a server:
// when the call's context ends (timeout, Promise.Cancel, Close) the lane returns at once, as
// it would over a network, whether or not the handler heeds the context, and what the handler
// returns later is dropped. Its context carries the call's deadline, is cancelled when the call
// is, and has the call's metadata as incoming metadata (metadata.FromIncomingContext), with
// the keys a grpc.Server's handler finds there too: :authority (Authority), content-type
// ("application/grpc" for a reactor's call, as for a plain grpc-go client's) and user-agent ("grpc-go/" and grpc-go's
// version; a grpc.WithUserAgent among Config.DialOptions is ignored). In it grpc-go's server
// functions work as on a gRPC server: grpc.SetHeader and grpc.SetTrailer add response metadata (joined when
// set more than once), grpc.SendHeader sends the header (once, and not after a response:
// later calls return an error, as in gRPC), and grpc.Method returns the method's path. A
// call gets the header and trailer when it asks for them (calls.Options.ResponseMetadata or
// reactor.MethodPolicy.ResponseMetadata), on success and failure alike. A handler's error is
// returned as its gRPC status (status.Error for a code; context.Canceled and
// context.DeadlineExceeded become Canceled and DeadlineExceeded, any other error Unknown).
// Unregistered methods fail with Unimplemented. A handler that panics fails its call alone:
// the panic is raised again on the lane, whose invoker recovers it into an Internal status
// with the panic's text and
// logs it, with its stack, through Config.Logger (a grpc.Server, which does not recover,
// would crash); the call is not retried. A Backend is safe for concurrent use; handlers may
// be registered at any time.
//
// With a ManualClock as the reactor's Config.Clock, a handler's deadline is on that clock, as
// a server's is on the server's: Advance or Set end its context, with
// context.DeadlineExceeded, as soon as they reach it (see ManualClock), and nothing else
// times it out. Its context's Deadline is on the system clock, as its users read it (a real
// server registered on the Backend passes it on to its own gRPC clients, net.Dialer or
// database driver): the time the call has left on the ManualClock when the handler starts,
// from the system clock's time then, whatever date the ManualClock reads; it does not move
// when the ManualClock does. A handler that returns after its deadline does not complete
// its call: the reactor times the call out, as a client's deadline fires when a server cuts
// the call off. A call whose deadline has passed before its handler starts does not run it.
//
// # A production Config
//
// With a Backend as Config.Conn, reactor.New accepts a Config that would dial a connection,
// checked as it is then, so that tests run with the Config production runs with (NewReactor
// also clears its Target and Targets, but not an xDS Target, whose rules then apply: see
// NewReactor). Idempotent policies are honoured as gRPC honours the service config reactor.New
// generates for them: a call of a method whose MethodPolicy is Idempotent, and not hedged (a
// hedged method gets no retry policy), that fails with one of Config.Retry.RetryableCodes
// (default Unavailable) runs again, up to Retry.MaxAttempts attempts in all, within the call's
// deadline, unless the handler sent the header first (grpc.SendHeader, or grpc.SetHeader before
// returning an error, which makes gRPC send the header ahead of the status), the request is
// larger than gRPC's retry buffer (256 KiB) or the status's trailer carries a
// grpc-retry-pushback-ms that forbids it. Retries are throttled as Retry's ThrottleMaxTokens
// and ThrottleTokenRatio say, each reactor on its own, as each has its own connection in
// production. Unlike gRPC, a Backend retries at once: it skips the backoff between attempts
// (Retry.InitialBackoff, MaxBackoff and BackoffMultiplier), so that tests never sleep, and a
// pushback's wait too. An exhausted call fails with the last attempt's status, its message
// prefixed as grpc-go prefixes it ("max retries exhausted: failed after 3 attempts: …"). Each
// attempt counts in Calls and runs the handler with a header and trailer of its own; the call
// gets the last attempt's.
//
// The settings of the transport are ignored: Credentials, DialOptions (interceptors and
// options that change retries among them), ServiceConfig and ServiceConfigLookup (retries a
// ServiceConfig sets are not honoured), Backoff, Keepalive, LoadBalancing, HealthCheck and
// HealthCheckService. A Backend is always ready, so WaitForReady changes nothing.
//
// # Streams
//
// NewStream serves the streaming methods: each stream runs its handler on a goroutine of its
// own, as a unary handler runs, in the context a unary handler gets (the stream's deadline,
// on a ManualClock too, its cancellation, its metadata as incoming metadata, grpc.SetHeader,
// grpc.SendHeader, grpc.SetTrailer and grpc.Method), with the requests the client sends
// decoded as a server decodes them and the responses it sends encoded as a server encodes
// them, the client decoding them with the stream's codec (grpc.ForceCodecV2) and within its
// receive limit (grpc.MaxCallRecvMsgSize). The client's end has grpc-go's semantics: RecvMsg
// returns the responses in order, then io.EOF for an OK end or the status error otherwise;
// SendMsg returns io.EOF once the stream has ended, RecvMsg then telling why; CloseSend
// closes the client's side, and the handler receives io.EOF after the requests sent before;
// Header waits until the handler sends the header (grpc.SendHeader, its first message, or
// its status if it set one) or the stream ends; Trailer is the handler's once the stream has
// ended; the client's context ending, or its RecvMsg failing (a response above the limit),
// cancels the handler's context, and a send or receive the handler waits in fails with
// Canceled. A handler's status is its error, as for a unary handler. A method b does not
// serve ends its streams with Unimplemented. A unary method's handler serves a stream of it
// with its one response, and a unary call of a streaming method gets the stream's one
// response, as a gRPC server serves them (a second response, or none, fails the call with
// Internal, as in grpc-go).
//
// Each direction of a stream is a window of encoded messages (DefaultStreamWindow bytes,
// HTTP/2's initial window, unless SetStreamWindow sets another), each message counting its
// length plus gRPC's 5-byte prefix: a send waits while the messages the other side has not
// read leave no room for its message, unless none waits, so that a message larger than the
// window passes alone. A handler's send so waits while the client does not read, as a
// server's does once its client stops reading; Stalls counts those waits, and WaitStalls
// waits for them. Streams counts the streams opened.
//
// With a ManualClock, a stream handler's context ends at the stream's deadline as a unary
// handler's does; the end of a handler that returns after its deadline does not reach the
// client, whose stream ends when its own context does (the reactor times it out on the same
// clock), after the messages sent before; a stream whose deadline has passed when it opens
// does not run its handler. A stream handler that panics ends its stream alone: the panic is
// raised again on the goroutine of the client's RecvMsg that reaches the stream's end, after
// the messages sent before the panic (a reactor's stream receiver recovers it, as an invoker
// recovers a unary handler's), and the stream is finished with Internal. Streams are not
// retried.
type Backend struct {
	standIn // marks the Backend as a stand-in for reactor.New, which hands it the retry policy

	mu       sync.Mutex
	handlers map[string]route // by Handle, HandleStream and HandleBidi, by path
	served   map[string]route // by RegisterService, by path
	services map[string]bool  // registered, by name
	calls    map[string]int
	streams  map[string]int
	stalls   map[string]int
	changed  chan struct{} // closed, and replaced, at each stall
	window   int           // of streams opened from now on
}

// handlerFunc serves one attempt of a call: it decodes the request from req and returns the
// response or the call's error.
type handlerFunc func(ctx context.Context, req []byte) (proto.Message, error)

// standIn is embedded under an unexported name so that the mark stays out of the API.
type standIn = standin.Mark

var _ grpc.ClientConnInterface = (*Backend)(nil)

// NewBackend returns a Backend with no methods.
func NewBackend() *Backend {
	b := &Backend{
		handlers: make(map[string]route),
		served:   make(map[string]route),
		services: make(map[string]bool),
		calls:    make(map[string]int),
		streams:  make(map[string]int),
		stalls:   make(map[string]int),
		changed:  make(chan struct{}),
		window:   DefaultStreamWindow,
	}
	b.standIn = standin.NewMark(b.forReactor)
	return b
}

// forReactor returns the connection a reactor configured with retry calls: b itself, or, if
// the reactor's policies mark methods idempotent, a view of b that retries their calls.
func (b *Backend) forReactor(retry standin.Retry) grpc.ClientConnInterface {
	if len(retry.Idempotent) == 0 {
		return b
	}
	return newRetrying(b, retry)
}

// Handle registers fn as the handler of method m on b, replacing any earlier one. It takes
// precedence over a service registered with RegisterService that has method m.
func Handle[Req, Resp proto.Message](b *Backend, m *calls.Method[Req, Resp], fn func(ctx context.Context, req Req) (Resp, error)) {
	var zero Req
	reqType := zero.ProtoReflect().Type()
	b.setHandler(m.Path(), route{unary: func(ctx context.Context, raw []byte) (proto.Message, error) {
		req := reqType.New().Interface().(Req)
		if err := decodeRequest(raw, req); err != nil {
			return nil, err
		}
		resp, err := fn(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp, nil
	}})
}

// setHandler makes rt the handler of the method at path, in place of any earlier one.
func (b *Backend) setHandler(path string, rt route) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handlers[path] = rt
}

// routeLocked returns what serves the method at path, and whether anything does; with mu
// held. A handler registered by path wins over a registered service.
func (b *Backend) routeLocked(path string) (route, bool) {
	if rt, ok := b.handlers[path]; ok {
		return rt, true
	}
	rt, ok := b.served[path]
	return rt, ok
}

// Calls returns how many calls of the method at path reached b (Invoke), handled or not;
// each attempt of a retried call counts. Streams count in Streams.
func (b *Backend) Calls(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[path]
}

// Invoke implements grpc.ClientConnInterface for the reactor's invokers. It honours the
// receive-size limit the reactor passes (grpc.MaxCallRecvMsgSize) as gRPC would, with
// ResourceExhausted, and fills grpc.Header and grpc.Trailer options with what the handler
// set. Called directly, it never retries; a reactor whose policies mark methods idempotent
// calls a view of b that does.
func (b *Backend) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	req, out, err := callArgs(args, reply, opts)
	if err != nil {
		return err
	}
	a := b.attempt(ctx, method, req, out, opts)
	a.fill(opts)
	return a.err
}

// callArgs encodes the request a reactor passes to Invoke as gRPC would before sending it
// (memconn.Encode), and returns it with the reply, which must be a proto.Message.
func callArgs(args, reply any, opts []grpc.CallOption) ([]byte, proto.Message, error) {
	out, ok := reply.(proto.Message)
	if !ok {
		return nil, nil, status.Errorf(codes.Internal, "reactortest: reply is %T, want a proto.Message", reply)
	}
	raw, err := memconn.Encode(args, opts)
	if err != nil {
		return nil, nil, err
	}
	return raw, out, nil
}

// attempt is the outcome of one attempt of a call.
type attempt struct {
	err             error
	header, trailer metadata.MD
	committed       bool // the header went out: gRPC would not retry
}

// attempt runs one attempt of a call of method: the handler, in a context that carries a
// server stream of its own (grpc.ServerTransportStream), then the response into out.
func (b *Backend) attempt(ctx context.Context, method string, req []byte, out proto.Message, opts []grpc.CallOption) attempt {
	b.mu.Lock()
	rt, ok := b.routeLocked(method)
	b.calls[method]++
	b.mu.Unlock()
	if !ok {
		return attempt{err: status.Errorf(codes.Unimplemented, "unknown method %s", method)}
	}
	if rt.stream != nil {
		return b.invokeStream(ctx, method, rt.stream, req, out, opts)
	}
	h := rt.unary
	if err := ctx.Err(); err != nil {
		return attempt{err: status.FromContextError(err).Err()}
	}
	base, deadline, release := handlerBase(ctx)
	if deadline != nil && deadline.Err() != nil {
		// A server aborts a call whose deadline has passed before its handler starts; here
		// the reactor that times it out on the same clock cuts it off.
		release()
		return cutOff(ctx)
	}
	stream := &serverStream{method: method}
	hctx := grpc.NewContextWithServerTransportStream(metadata.NewIncomingContext(base, incoming(ctx, opts)), stream)
	// The handler runs on a goroutine of its own, as on a server: a call whose context ends
	// returns at once, as it would over a network, whether or not the handler heeds the
	// context.
	done := make(chan handled, 1)
	go func() {
		var res handled
		defer func() {
			res.panicValue = recover()
			res.late = deadline != nil && errors.Is(deadline.Err(), context.DeadlineExceeded)
			release()
			done <- res
		}()
		res.resp, res.err = h(hctx, req)
	}()
	var res handled
	select {
	case res = <-done:
	case <-ctx.Done():
		return attempt{err: status.FromContextError(ctx.Err()).Err()}
	}
	if res.panicValue != nil {
		panic(res.panicValue) // on the caller's goroutine: a reactor's invoker recovers it
	}
	if res.late {
		return cutOff(ctx) // a server would have cut the call off at its deadline
	}
	var a attempt
	a.header, a.trailer, a.committed = stream.finish(res.err == nil)
	a.err = respond(ctx, res.resp, res.err, out, opts)
	return a
}

// handlerBase returns the context a handler's context derives from, for a call whose
// context is ctx. For a call of a reactor whose clock is a ManualClock, it is a child of
// deadline, which ends at the call's deadline on that clock and reports as its Deadline the
// time left then on the system clock, and release ends it and detaches deadline, once the
// handler has returned. For other calls, it is ctx, whose deadline is on the system clock,
// with a nil deadline.
func handlerBase(ctx context.Context) (base context.Context, deadline *clockContext, release func()) {
	if d, ok := standin.DeadlineOf(ctx); ok {
		if clock, ok := d.Clock.(*ManualClock); ok {
			deadline, detach := clock.handlerContext(ctx, d.At)
			base, cancel := context.WithCancel(deadline) // context.Cause finds the error in it
			return base, deadline, func() {
				cancel()
				detach()
			}
		}
	}
	return ctx, nil, func() {}
}

// cutOff waits until ctx, the context of a call whose deadline has passed on its reactor's
// ManualClock, ends, and returns DeadlineExceeded. The reactor times the call out at that
// deadline, as a client's own deadline fires when a server cuts a call off at it: the call
// fails as it would over a network, and always with the reactor's timeout.
func cutOff(ctx context.Context) attempt {
	<-ctx.Done()
	return attempt{err: status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())}
}

// Authority is the :authority in a Backend handler's incoming metadata. A grpc.Server's
// handler sees there the authority of the target its client dialled ("host:port" for a
// Config.Target "host:port"); a Backend is dialled at no target (NewReactor clears
// Config.Target), so its handlers see this fixed name, which names no host.
const Authority = "reactortest.backend"

// userAgent is the user-agent grpc-go's client sends when its dial sets none
// (grpc.WithUserAgent, which a Backend cannot see among Config.DialOptions, prefixes it).
const userAgent = "grpc-go/" + grpc.Version

// incoming returns the incoming metadata of the handler of a call whose context is ctx and
// options opts: the call's metadata, and the keys a grpc.Server adds from the request's
// headers, as grpc-go's client sends them: :authority (Authority), content-type and
// user-agent.
func incoming(ctx context.Context, opts []grpc.CallOption) metadata.MD {
	md, ok := metadata.FromOutgoingContext(ctx) // a copy
	if !ok {
		md = make(metadata.MD, 3)
	}
	md[":authority"] = []string{Authority}
	md["content-type"] = []string{contentType(opts)}
	md["user-agent"] = []string{userAgent}
	return md
}

// contentType returns the content-type grpc-go's client sends for a call with opts:
// "application/grpc", with "+" and the content subtype if the call has one: the one it sets
// (grpc.CallContentSubtype), or else the name of the codec it forces, in lower case (a
// reactor's lanes force theirs, whose name is empty).
func contentType(opts []grpc.CallOption) string {
	subtype, codec := "", ""
	for _, o := range opts { // in order: the last of each wins
		switch o := o.(type) {
		case grpc.ContentSubtypeCallOption:
			subtype = o.ContentSubtype
		case grpc.ForceCodecV2CallOption:
			codec = o.CodecV2.Name()
		case grpc.ForceCodecCallOption:
			codec = o.Codec.Name()
		}
	}
	if subtype == "" {
		subtype = strings.ToLower(codec)
	}
	if subtype == "" {
		return "application/grpc"
	}
	return "application/grpc+" + subtype
}

// handled is what a handler did: its response and error, or its panic.
type handled struct {
	resp       proto.Message
	err        error
	panicValue any  // recover's value, never nil for a panic
	late       bool // the handler returned after its deadline on a ManualClock had passed
}

// respond returns the error of an attempt whose handler returned resp and err, after
// decoding resp into out.
func respond(ctx context.Context, resp proto.Message, err error, out proto.Message, opts []grpc.CallOption) error {
	if err := ctx.Err(); err != nil { // the caller gave up while the handler ran
		return status.FromContextError(err).Err()
	}
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.FromContextError(err).Err() // as grpc.Server: a context error keeps its code, others are Unknown
	}
	raw, err := proto.Marshal(resp)
	if err != nil {
		return status.Errorf(codes.Internal, "reactortest: encoding the response: %v", err)
	}
	if limit := recvLimit(opts); limit >= 0 && len(raw) > limit {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", len(raw), limit)
	}
	return memconn.Decode(raw, out, opts)
}

// fill hands the attempt's header and trailer to the grpc.Header and grpc.Trailer options
// among opts.
func (a *attempt) fill(opts []grpc.CallOption) {
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = a.header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = a.trailer
		}
	}
}

// decodeRequest decodes a call's request from raw into m, as a server does before it calls
// the method's handler.
func decodeRequest(raw []byte, m proto.Message) error {
	if err := proto.Unmarshal(raw, m); err != nil {
		return status.Errorf(codes.Internal, "reactortest: decoding the request: %v", err)
	}
	return nil
}

// recvLimit returns the last receive limit among opts, or -1.
func recvLimit(opts []grpc.CallOption) int {
	if l, ok := memconn.LastOption[grpc.MaxRecvMsgSizeCallOption](opts); ok {
		return l.MaxRecvMsgSize
	}
	return -1
}
