package testserver

import (
	"fmt"
	"net"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// StartOn is Start listening on addr instead of "127.0.0.1:0": another loopback
// address ("127.0.0.2:0", for a second backend host), or a fixed port (a
// port reserved earlier, for a server that comes up after its clients). Addr
// and Restart use the address actually bound. It calls t.Fatal if it cannot
// listen; a test that needs an optional address should check it can bind it
// first and skip otherwise.
func StartOn(t testing.TB, addr string, opts ...grpc.ServerOption) *Server {
	t.Helper()
	lis, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("testserver: listen on %s: %v", addr, err)
	}
	s := &Server{
		tb:        t,
		opts:      append([]grpc.ServerOption(nil), opts...),
		addr:      lis.Addr().String(),
		cancelled: make(chan struct{}, cancelledBuffer),
	}
	s.serve(lis)
	t.Cleanup(s.Stop)
	return s
}

// WithServices returns a server option that serves, next to TestService, the
// services register registers (for example the standard health service, or a
// copy of TestService's descriptor under another service name), on every
// incarnation of the server: Restart keeps them. register runs once, when
// WithServices is called; the implementations it registers are shared by all
// incarnations.
//
// The services are served through grpc.UnknownServiceHandler, so the option
// cannot be combined with another UnknownServiceHandler, and server stream
// interceptors see all their methods as streams (unary interceptors never
// run). Unary methods and streaming methods are both supported. A method path
// that is not registered fails with Unimplemented, as on a plain grpc.Server.
func WithServices(register func(grpc.ServiceRegistrar)) grpc.ServerOption {
	reg := &registrar{unary: map[string]unaryMethod{}, streams: map[string]streamMethod{}}
	register(reg)
	return grpc.UnknownServiceHandler(reg.handle)
}

type unaryMethod struct {
	impl    any
	handler grpc.MethodHandler
}

type streamMethod struct {
	impl    any
	handler grpc.StreamHandler
}

// registrar collects services by full method path ("/pkg.Service/Method").
type registrar struct {
	unary   map[string]unaryMethod
	streams map[string]streamMethod
}

// RegisterService implements grpc.ServiceRegistrar. Like grpc.Server's, it
// panics if impl does not implement desc.HandlerType or a method is registered
// twice.
func (r *registrar) RegisterService(desc *grpc.ServiceDesc, impl any) {
	if desc.HandlerType != nil {
		ht := reflect.TypeOf(desc.HandlerType).Elem()
		if st := reflect.TypeOf(impl); !st.Implements(ht) {
			panic(fmt.Sprintf("testserver: WithServices: %v does not implement %v", st, ht))
		}
	}
	for _, m := range desc.Methods {
		path := "/" + desc.ServiceName + "/" + m.MethodName
		r.checkNew(path)
		r.unary[path] = unaryMethod{impl: impl, handler: m.Handler}
	}
	for _, m := range desc.Streams {
		path := "/" + desc.ServiceName + "/" + m.StreamName
		r.checkNew(path)
		r.streams[path] = streamMethod{impl: impl, handler: m.Handler}
	}
}

func (r *registrar) checkNew(path string) {
	_, u := r.unary[path]
	_, s := r.streams[path]
	if u || s {
		panic("testserver: WithServices: " + path + " registered twice")
	}
}

// handle serves one stream of a service grpc.Server does not know.
func (r *registrar) handle(_ any, stream grpc.ServerStream) error {
	path, ok := grpc.MethodFromServerStream(stream)
	if !ok {
		return status.Error(codes.Internal, "testserver: no method name in the stream")
	}
	if m, ok := r.streams[path]; ok {
		return m.handler(m.impl, stream)
	}
	m, ok := r.unary[path]
	if !ok {
		service, method, _ := strings.Cut(strings.TrimPrefix(path, "/"), "/")
		return status.Errorf(codes.Unimplemented, "unknown method %s for service %s", method, service)
	}
	resp, err := m.handler(m.impl, stream.Context(), stream.RecvMsg, nil)
	if err != nil {
		return err
	}
	return stream.SendMsg(resp)
}

// Compile-time check.
var _ grpc.ServiceRegistrar = (*registrar)(nil)
