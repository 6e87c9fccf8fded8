package reactortest

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/codec"
)

// Backend is an in-memory gRPC backend: a grpc.ClientConnInterface to pass as
// reactor.Config.Conn, whose unary methods are Go funcs registered with Handle. Calls go
// through the same codec, limits and reactor machinery as on a network, without one.
//
// A handler runs on the invoker lane (goroutine) that runs the call, so a handler that
// blocks holds that lane. Its context carries the call's deadline, is cancelled when the call
// is (timeout, Promise.Cancel, Close), and has the call's metadata as incoming metadata
// (metadata.FromIncomingContext), as on a gRPC server. A handler's error is returned as its
// gRPC status (status.Error for a code; any other error becomes Unknown). Unregistered
// methods fail with Unimplemented. A Backend is safe for concurrent use; handlers may be
// registered at any time.
type Backend struct {
	mu       sync.Mutex
	handlers map[string]func(ctx context.Context, req []byte) (proto.Message, error)
	calls    map[string]int
}

var _ grpc.ClientConnInterface = (*Backend)(nil)

// NewBackend returns a Backend with no methods.
func NewBackend() *Backend {
	return &Backend{
		handlers: make(map[string]func(context.Context, []byte) (proto.Message, error)),
		calls:    make(map[string]int),
	}
}

// Handle registers fn as the handler of method m on b, replacing any earlier one.
func Handle[Req, Resp proto.Message](b *Backend, m *calls.Method[Req, Resp], fn func(ctx context.Context, req Req) (Resp, error)) {
	var zero Req
	reqType := zero.ProtoReflect().Type()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.handlers[m.Path()] = func(ctx context.Context, raw []byte) (proto.Message, error) {
		req := reqType.New().Interface().(Req)
		if err := proto.Unmarshal(raw, req); err != nil {
			return nil, status.Errorf(codes.Internal, "reactortest: decoding the request: %v", err)
		}
		resp, err := fn(ctx, req)
		if err != nil {
			return nil, err
		}
		return resp, nil
	}
}

// Calls returns how many calls of the method at path reached b, handled or not.
func (b *Backend) Calls(path string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.calls[path]
}

// Invoke implements grpc.ClientConnInterface for the reactor's invokers. It honours the
// receive-size limit the reactor passes (grpc.MaxCallRecvMsgSize) as gRPC would, with
// ResourceExhausted, and fills grpc.Header and grpc.Trailer options from SetHeader and
// SetTrailer.
func (b *Backend) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	frame, ok := args.(*codec.Frame)
	if !ok {
		return status.Errorf(codes.Internal, "reactortest: request is %T, want *codec.Frame (use the Backend through a reactor)", args)
	}
	out, ok := reply.(*codec.Reply)
	if !ok {
		return status.Errorf(codes.Internal, "reactortest: reply is %T, want *codec.Reply (use the Backend through a reactor)", reply)
	}
	b.mu.Lock()
	h := b.handlers[method]
	b.calls[method]++
	b.mu.Unlock()
	if h == nil {
		return status.Errorf(codes.Unimplemented, "unknown method %s", method)
	}
	if err := ctx.Err(); err != nil {
		return status.FromContextError(err).Err()
	}
	md, _ := metadata.FromOutgoingContext(ctx)
	sent := &sentMetadata{}
	hctx := metadata.NewIncomingContext(context.WithValue(ctx, sentKey{}, sent), md)
	resp, err := h(hctx, frame.Bytes)
	setCallMetadata(opts, sent)
	if err := ctx.Err(); err != nil { // the caller gave up while the handler ran
		return status.FromContextError(err).Err()
	}
	if err != nil {
		if _, ok := status.FromError(err); ok {
			return err
		}
		return status.Error(codes.Unknown, err.Error())
	}
	raw, err := proto.Marshal(resp)
	if err != nil {
		return status.Errorf(codes.Internal, "reactortest: encoding the response: %v", err)
	}
	if limit := recvLimit(opts); limit >= 0 && len(raw) > limit {
		return status.Errorf(codes.ResourceExhausted, "grpc: received message larger than max (%d vs. %d)", len(raw), limit)
	}
	if err := proto.Unmarshal(raw, out.Msg); err != nil {
		return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return nil
}

// NewStream implements grpc.ClientConnInterface; streams are not supported.
func (b *Backend) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "reactortest: streams are not supported")
}

// recvLimit returns the last receive limit among opts, or -1.
func recvLimit(opts []grpc.CallOption) int {
	limit := -1
	for _, o := range opts {
		if l, ok := o.(grpc.MaxRecvMsgSizeCallOption); ok {
			limit = l.MaxRecvMsgSize
		}
	}
	return limit
}

type sentKey struct{}

type sentMetadata struct {
	mu              sync.Mutex
	header, trailer metadata.MD
}

// SetHeader adds response headers from inside a Backend handler, like grpc.SetHeader on a
// server; headers set more than once are joined. Outside a handler it returns an error.
func SetHeader(ctx context.Context, md metadata.MD) error { return setSent(ctx, md, false) }

// SetTrailer adds response trailers from inside a Backend handler, like grpc.SetTrailer on a
// server; trailers set more than once are joined. Outside a handler it returns an error.
func SetTrailer(ctx context.Context, md metadata.MD) error { return setSent(ctx, md, true) }

func setSent(ctx context.Context, md metadata.MD, trailer bool) error {
	s, ok := ctx.Value(sentKey{}).(*sentMetadata)
	if !ok {
		return fmt.Errorf("reactortest: SetHeader and SetTrailer work only inside a Backend handler")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if trailer {
		s.trailer = metadata.Join(s.trailer, md)
	} else {
		s.header = metadata.Join(s.header, md)
	}
	return nil
}

func setCallMetadata(opts []grpc.CallOption, s *sentMetadata) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.HeaderCallOption:
			*o.HeaderAddr = s.header
		case grpc.TrailerCallOption:
			*o.TrailerAddr = s.trailer
		}
	}
}
