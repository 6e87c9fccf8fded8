package reactortest

import (
	"context"
	"fmt"
	"reflect"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

var _ grpc.ServiceRegistrar = (*Backend)(nil)

// RegisterService implements grpc.ServiceRegistrar, so that the registration function
// protoc-gen-go-grpc generates registers a service implementation on b as on a grpc.Server:
//
//	pb.RegisterDataServiceServer(b, &fakeDataService{})
//
// The methods of desc are then served by impl, through desc's method and stream handlers, as
// a grpc.Server without interceptors serves them: in the handler context Backend describes
// (the call's deadline and cancellation, its metadata as incoming metadata, grpc.SetHeader,
// grpc.SendHeader, grpc.SetTrailer and grpc.Method), with the request decoded from the bytes
// the reactor sent; a streaming method (desc.Streams: server-streaming, client-streaming or
// bidirectional) on a stream that NewStream opens, as Backend describes. A method that impl
// leaves to the embedded Unimplemented…Server fails with Unimplemented, as on a server.
// Server interceptors (grpc.UnaryInterceptor, grpc.StreamInterceptor and their chains) are
// not supported: the handlers get a nil interceptor. Calls of registered methods count in
// Calls, and are retried as Backend describes; streams count in Streams.
//
// A func registered with Handle, HandleStream or HandleBidi for a method of a registered
// service takes precedence over the service, whichever was registered first, so that a test
// can override one method of a fake server. Services may be registered at any time, concurrently with calls.
//
// RegisterService panics, with a message that begins "reactortest: RegisterService:", where
// grpc.Server would end the process (grpc-go's logger.Fatalf): if impl does not implement
// the interface desc.HandlerType points to, or if a service named desc.ServiceName is
// registered on b already. Unlike grpc.Server, it panics for a nil desc or impl too, as the
// generated handlers would fail every call of a nil impl.
func (b *Backend) RegisterService(desc *grpc.ServiceDesc, impl any) {
	if err := checkService(desc, impl); err != nil {
		panic("reactortest: RegisterService: " + err.Error())
	}
	served := make(map[string]route, len(desc.Methods)+len(desc.Streams))
	for _, m := range desc.Methods {
		served["/"+desc.ServiceName+"/"+m.MethodName] = route{unary: unaryHandler(impl, m.Handler)}
	}
	for _, s := range desc.Streams {
		served["/"+desc.ServiceName+"/"+s.StreamName] = route{stream: streamHandler(impl, s)}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.services[desc.ServiceName] {
		panic(fmt.Sprintf("reactortest: RegisterService: found duplicate service registration for %q", desc.ServiceName))
	}
	b.services[desc.ServiceName] = true
	for path, h := range served {
		b.served[path] = h
	}
}

// checkService reports what makes impl unfit to serve desc, as grpc.Server checks it.
func checkService(desc *grpc.ServiceDesc, impl any) error {
	if desc == nil {
		return fmt.Errorf("desc is nil")
	}
	if impl == nil {
		return fmt.Errorf("the implementation of %q is nil", desc.ServiceName)
	}
	ht := reflect.TypeOf(desc.HandlerType)
	if ht == nil || ht.Kind() != reflect.Pointer || ht.Elem().Kind() != reflect.Interface {
		return fmt.Errorf("HandlerType of %q is %T; must be a pointer to the service's interface, as (*pb.XServer)(nil)", desc.ServiceName, desc.HandlerType)
	}
	if st := reflect.TypeOf(impl); !st.Implements(ht.Elem()) {
		return fmt.Errorf("found the handler of type %v that does not satisfy %v", st, ht.Elem())
	}
	return nil
}

// unaryHandler returns the handlerFunc that serves a unary method of impl through its
// method handler h, as grpc.Server does with no interceptor.
func unaryHandler(impl any, h grpc.MethodHandler) handlerFunc {
	return func(ctx context.Context, raw []byte) (proto.Message, error) {
		dec := func(m any) error {
			msg, ok := m.(proto.Message)
			if !ok {
				return status.Errorf(codes.Internal, "reactortest: decoding the request: %T is not a proto.Message", m)
			}
			return decodeRequest(raw, msg)
		}
		resp, err := h(impl, ctx, dec, nil)
		if err != nil {
			return nil, err
		}
		msg, ok := resp.(proto.Message)
		if !ok {
			return nil, status.Errorf(codes.Internal, "reactortest: the handler of %s returned %T, not a proto.Message", grpc.ServerTransportStreamFromContext(ctx).Method(), resp)
		}
		return msg, nil
	}
}

// streamHandler returns the streamRoute that serves a streaming method of impl, desc, through
// its stream handler, as grpc.Server does with no interceptor.
func streamHandler(impl any, desc grpc.StreamDesc) *streamRoute {
	return &streamRoute{clientStreams: desc.ClientStreams, run: func(ss *handlerStream) error {
		return desc.Handler(impl, ss)
	}}
}
