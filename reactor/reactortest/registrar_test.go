package reactortest_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// fakeEcho is a TestService implementation, as a user's fake server would be: Echo runs
// echo.
type fakeEcho struct {
	testpb.UnimplementedTestServiceServer
	echo func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)
}

func (f *fakeEcho) Echo(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return f.echo(ctx, req)
}

// unimplementedEcho implements no method of TestService: it embeds the generated
// UnimplementedTestServiceServer only.
type unimplementedEcho struct {
	testpb.UnimplementedTestServiceServer
}

// callEcho calls m on r with req and opts, flushes r, and returns the response, if any, and
// the promise.
func callEcho(t *testing.T, r *reactor.Reactor, m *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse], req *testpb.EchoRequest, opts *calls.Options) (*testpb.EchoResponse, *calls.Promise[*testpb.EchoResponse]) {
	t.Helper()
	var resp *testpb.EchoResponse
	p := reactor.Call(r, m, req, opts).Then(func(x *testpb.EchoResponse) { resp = x })
	reactortest.Flush(t, r)
	require.NotEqual(t, calls.Pending, p.State())
	return resp, p
}

// TestBackendRegisterService checks that the methods of a service implementation registered
// with the generated RegisterXServer function are served as on a gRPC server.
func TestBackendRegisterService(t *testing.T) {
	const timeout = 4 * time.Second
	tests := []struct {
		name string
		impl testpb.TestServiceServer
		opts *calls.Options
		// check is given the response, the promise, and the times before the call and after
		// it settled.
		check func(t *testing.T, resp *testpb.EchoResponse, p *calls.Promise[*testpb.EchoResponse], before, after time.Time)
	}{
		{
			name: "response",
			impl: &fakeEcho{echo: func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return &testpb.EchoResponse{Message: "re: " + req.GetMessage()}, nil
			}},
			check: func(t *testing.T, resp *testpb.EchoResponse, p *calls.Promise[*testpb.EchoResponse], _, _ time.Time) {
				require.NoError(t, p.Err())
				require.Equal(t, "re: hi", resp.GetMessage())
			},
		},
		{
			name: "status error keeps its code and message",
			impl: &fakeEcho{echo: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return nil, status.Error(codes.NotFound, "no such player")
			}},
			check: func(t *testing.T, resp *testpb.EchoResponse, p *calls.Promise[*testpb.EchoResponse], _, _ time.Time) {
				require.Equal(t, codes.NotFound, status.Code(p.Err()))
				require.Equal(t, "no such player", status.Convert(p.Err()).Message())
			},
		},
		{
			name: "incoming metadata, deadline and method in the handler's context",
			impl: &fakeEcho{echo: func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				md, _ := metadata.FromIncomingContext(ctx)
				deadline, ok := ctx.Deadline()
				if !ok {
					return nil, status.Error(codes.FailedPrecondition, "no deadline")
				}
				method, _ := grpc.Method(ctx)
				return &testpb.EchoResponse{Message: deadline.Format(time.RFC3339Nano), Metadata: map[string]string{
					"server-id": strings.Join(md.Get("server-id"), ","),
					"method":    method,
				}}, nil
			}},
			opts: &calls.Options{Timeout: timeout, Metadata: metadata.Pairs("Server-ID", "lobby")},
			check: func(t *testing.T, resp *testpb.EchoResponse, p *calls.Promise[*testpb.EchoResponse], before, after time.Time) {
				require.NoError(t, p.Err())
				require.Equal(t, map[string]string{"server-id": "lobby", "method": echo.Path()}, resp.GetMetadata())
				deadline, err := time.Parse(time.RFC3339Nano, resp.GetMessage())
				require.NoError(t, err)
				// The deadline is the call's Timeout after its submission; the margin of a
				// millisecond covers the wall clock's rounding.
				require.WithinRange(t, deadline, before.Add(timeout-time.Millisecond), after.Add(timeout+time.Millisecond))
			},
		},
		{
			name: "grpc.SetHeader and grpc.SetTrailer",
			impl: &fakeEcho{echo: func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				if err := grpc.SetHeader(ctx, metadata.Pairs("x-h", "1")); err != nil {
					return nil, err
				}
				if err := grpc.SetTrailer(ctx, metadata.Pairs("x-t", "2")); err != nil {
					return nil, err
				}
				return &testpb.EchoResponse{}, nil
			}},
			opts: &calls.Options{ResponseMetadata: true},
			check: func(t *testing.T, resp *testpb.EchoResponse, p *calls.Promise[*testpb.EchoResponse], _, _ time.Time) {
				require.NoError(t, p.Err())
				require.Equal(t, []string{"1"}, p.Header().Get("x-h"))
				require.Equal(t, []string{"2"}, p.Trailer().Get("x-t"))
			},
		},
		{
			name: "a method left to UnimplementedTestServiceServer",
			impl: &unimplementedEcho{},
			check: func(t *testing.T, resp *testpb.EchoResponse, p *calls.Promise[*testpb.EchoResponse], _, _ time.Time) {
				require.Equal(t, codes.Unimplemented, status.Code(p.Err()))
				require.Equal(t, "method Echo not implemented", status.Convert(p.Err()).Message())
			},
		},
		{
			name: "a panic fails the call with Internal",
			impl: &fakeEcho{echo: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				panic("fake server broke")
			}},
			check: func(t *testing.T, resp *testpb.EchoResponse, p *calls.Promise[*testpb.EchoResponse], _, _ time.Time) {
				require.Equal(t, codes.Internal, status.Code(p.Err()))
				require.Contains(t, status.Convert(p.Err()).Message(), "fake server broke")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			testpb.RegisterTestServiceServer(b, tc.impl)
			r := reactortest.NewReactor(t, b, reactor.Config{Logger: slog.New(slog.DiscardHandler)})
			before := time.Now()
			resp, p := callEcho(t, r, echo, &testpb.EchoRequest{Message: "hi"}, tc.opts)
			tc.check(t, resp, p, before, time.Now())
			require.Equal(t, 1, b.Calls(echo.Path()))
		})
	}
}

// watch is a server-streaming method of a service that also has a unary one, called as a
// unary method.
var watch = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Streams/Watch")

// streamsDesc describes a service, as protoc-gen-go-grpc would, with a unary method (Echo,
// served by a TestServiceServer) and a server-streaming one (Watch), which sends the
// request's message back once for each of its bytes.
var streamsDesc = grpc.ServiceDesc{
	ServiceName: "prpctest.Streams",
	HandlerType: (*testpb.TestServiceServer)(nil),
	Methods:     []grpc.MethodDesc{{MethodName: "Echo", Handler: testpb.TestService_ServiceDesc.Methods[0].Handler}},
	Streams: []grpc.StreamDesc{{
		StreamName:    "Watch",
		ServerStreams: true,
		Handler: func(_ any, ss grpc.ServerStream) error {
			req := new(testpb.EchoRequest)
			if err := ss.RecvMsg(req); err != nil {
				return err
			}
			for range len(req.GetMessage()) {
				if err := ss.SendMsg(&testpb.EchoResponse{Message: req.GetMessage()}); err != nil {
					return err
				}
			}
			return nil
		},
	}},
}

// TestBackendRegisteredStream checks that a streaming method of a registered service is
// served on a stream and counts in Streams, while its unary methods are served; that a call
// of the streaming method as a unary one gets its one response, or fails with Internal as in
// grpc-go if the handler sends none or two, and counts in Calls; and that a stream of the
// unary method gets its response.
func TestBackendRegisteredStream(t *testing.T) {
	b := reactortest.NewBackend()
	b.RegisterService(&streamsDesc, &fakeEcho{echo: func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: "unary " + req.GetMessage()}, nil
	}})
	r := reactortest.NewReactor(t, b, reactor.Config{})
	echoPath := "/prpctest.Streams/Echo"
	resp, unary := callEcho(t, r, calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse](echoPath), &testpb.EchoRequest{}, nil)
	require.NoError(t, unary.Err())
	require.Equal(t, "unary ", resp.GetMessage())

	cs, err := b.NewStream(context.Background(), &streamsDesc.Streams[0], watch.Path())
	require.NoError(t, err)
	s := &grpc.GenericClientStream[testpb.EchoRequest, testpb.EchoResponse]{ClientStream: cs}
	require.NoError(t, s.SendMsg(&testpb.EchoRequest{Message: "abc"}))
	var got []string
	for {
		m, err := s.Recv()
		if err != nil {
			require.Equal(t, io.EOF, err)
			break
		}
		got = append(got, m.GetMessage())
	}
	require.Equal(t, []string{"abc", "abc", "abc"}, got)
	require.Equal(t, 1, b.Streams(watch.Path()))
	require.Zero(t, b.Calls(watch.Path()))

	for _, tc := range []struct {
		msg  string
		want string // the error's message; "": none
	}{
		{"a", ""},
		{"", "cardinality violation: received no response message from non-server-streaming RPC"},
		{"ab", "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message"},
	} {
		resp, p := callEcho(t, r, watch, &testpb.EchoRequest{Message: tc.msg}, nil)
		if tc.want == "" {
			require.NoError(t, p.Err())
			require.Equal(t, tc.msg, resp.GetMessage())
			continue
		}
		require.Equal(t, codes.Internal, status.Code(p.Err()), "%v", p.Err())
		require.Equal(t, tc.want, status.Convert(p.Err()).Message())
	}
	require.Equal(t, 3, b.Calls(watch.Path()))
	require.Equal(t, 1, b.Streams(watch.Path()))

	cs, err = b.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true}, echoPath)
	require.NoError(t, err)
	require.NoError(t, cs.SendMsg(&testpb.EchoRequest{Message: "x"}))
	var out testpb.EchoResponse
	require.NoError(t, cs.RecvMsg(&out))
	require.Equal(t, "unary x", out.GetMessage())
	require.Equal(t, io.EOF, cs.RecvMsg(&out))
	require.Equal(t, 1, b.Streams(echoPath))
}

// wrongServer implements no TestServiceServer: its Echo has another signature.
type wrongServer struct{}

func (wrongServer) Echo(context.Context, *testpb.EchoRequest) error { return nil }

// TestBackendRegisterServicePanics checks that RegisterService refuses, with a panic that
// names the fault, what grpc.Server refuses with a fatal log, and a nil desc or
// implementation.
func TestBackendRegisterServicePanics(t *testing.T) {
	noHandlerType := testpb.TestService_ServiceDesc
	noHandlerType.HandlerType = nil
	notPointer := testpb.TestService_ServiceDesc
	notPointer.HandlerType = "prpctest.TestService"
	tests := []struct {
		name     string
		register func(b *reactortest.Backend)
		want     string
	}{
		{
			name:     "an implementation of another interface",
			register: func(b *reactortest.Backend) { b.RegisterService(&testpb.TestService_ServiceDesc, wrongServer{}) },
			want:     "reactortest: RegisterService: found the handler of type reactortest_test.wrongServer that does not satisfy testpb.TestServiceServer",
		},
		{
			name: "the same service twice",
			register: func(b *reactortest.Backend) {
				testpb.RegisterTestServiceServer(b, &unimplementedEcho{})
				testpb.RegisterTestServiceServer(b, &unimplementedEcho{})
			},
			want: `reactortest: RegisterService: found duplicate service registration for "prpctest.TestService"`,
		},
		{
			name:     "a nil implementation",
			register: func(b *reactortest.Backend) { b.RegisterService(&testpb.TestService_ServiceDesc, nil) },
			want:     `reactortest: RegisterService: the implementation of "prpctest.TestService" is nil`,
		},
		{
			name:     "a nil desc",
			register: func(b *reactortest.Backend) { b.RegisterService(nil, &unimplementedEcho{}) },
			want:     "reactortest: RegisterService: desc is nil",
		},
		{
			name:     "no HandlerType",
			register: func(b *reactortest.Backend) { b.RegisterService(&noHandlerType, &unimplementedEcho{}) },
			want:     `reactortest: RegisterService: HandlerType of "prpctest.TestService" is <nil>; must be a pointer to the service's interface, as (*pb.XServer)(nil)`,
		},
		{
			name:     "a HandlerType that is not a pointer to an interface",
			register: func(b *reactortest.Backend) { b.RegisterService(&notPointer, &unimplementedEcho{}) },
			want:     `reactortest: RegisterService: HandlerType of "prpctest.TestService" is string; must be a pointer to the service's interface, as (*pb.XServer)(nil)`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			require.PanicsWithValue(t, tc.want, func() { tc.register(reactortest.NewBackend()) })
		})
	}
}

// TestBackendRegisteredFailedRegistrationServesNothing checks that a refused registration
// leaves nothing behind: the first registration keeps serving.
func TestBackendRegisteredFailedRegistrationServesNothing(t *testing.T) {
	b := reactortest.NewBackend()
	require.Panics(t, func() { b.RegisterService(&testpb.TestService_ServiceDesc, wrongServer{}) })
	testpb.RegisterTestServiceServer(b, &fakeEcho{echo: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: "first"}, nil
	}})
	require.Panics(t, func() { testpb.RegisterTestServiceServer(b, &unimplementedEcho{}) })
	r := reactortest.NewReactor(t, b, reactor.Config{})
	resp, p := callEcho(t, r, echo, &testpb.EchoRequest{}, nil)
	require.NoError(t, p.Err())
	require.Equal(t, "first", resp.GetMessage())
}

// TestBackendHandleBesideService checks that Handle serves methods beside a registered
// service, and that a Handle func takes precedence over the service's method, whichever was
// registered first.
func TestBackendHandleBesideService(t *testing.T) {
	fromService := &fakeEcho{echo: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: "service"}, nil
	}}
	fromHandle := func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: "handle"}, nil
	}
	tests := []struct {
		name     string
		register func(b *reactortest.Backend)
		method   *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse]
		want     string
	}{
		{name: "Handle after the service wins", method: echo, want: "handle",
			register: func(b *reactortest.Backend) {
				testpb.RegisterTestServiceServer(b, fromService)
				reactortest.Handle(b, echo, fromHandle)
			}},
		{name: "Handle before the service wins", method: echo, want: "handle",
			register: func(b *reactortest.Backend) {
				reactortest.Handle(b, echo, fromHandle)
				testpb.RegisterTestServiceServer(b, fromService)
			}},
		{name: "Handle of another method leaves the service's", method: echo, want: "service",
			register: func(b *reactortest.Backend) {
				reactortest.Handle(b, echoOther, fromHandle)
				testpb.RegisterTestServiceServer(b, fromService)
			}},
		{name: "the service leaves Handle's other method", method: echoOther, want: "handle",
			register: func(b *reactortest.Backend) {
				reactortest.Handle(b, echoOther, fromHandle)
				testpb.RegisterTestServiceServer(b, fromService)
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			tc.register(b)
			r := reactortest.NewReactor(t, b, reactor.Config{})
			resp, p := callEcho(t, r, tc.method, &testpb.EchoRequest{}, nil)
			require.NoError(t, p.Err())
			require.Equal(t, tc.want, resp.GetMessage())
			require.Equal(t, 1, b.Calls(tc.method.Path()))
		})
	}
}

// TestBackendRegisteredRetries checks that calls of an idempotent method of a registered
// service are retried as Handle's are, and that a panic is not retried.
func TestBackendRegisteredRetries(t *testing.T) {
	tests := []struct {
		name     string
		fail     func(n int32) error // the error of attempt n, or nil to succeed
		attempts int
		code     codes.Code
	}{
		{name: "fails twice, succeeds at the third attempt", attempts: 3, code: codes.OK,
			fail: func(n int32) error {
				if n <= 2 {
					return status.Errorf(codes.Unavailable, "attempt %d refused", n)
				}
				return nil
			}},
		{name: "a code that is not retryable", attempts: 1, code: codes.Aborted,
			fail: func(int32) error { return status.Error(codes.Aborted, "no") }},
		{name: "a panic is not retried", attempts: 1, code: codes.Internal,
			fail: func(n int32) error { panic(fmt.Sprintf("attempt %d broke", n)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var attempts atomic.Int32
			b := reactortest.NewBackend()
			testpb.RegisterTestServiceServer(b, &fakeEcho{echo: func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				if err := tc.fail(attempts.Add(1)); err != nil {
					return nil, err
				}
				return &testpb.EchoResponse{Message: "served"}, nil
			}})
			r := reactortest.NewReactor(t, b, reactor.Config{
				Logger:   slog.New(slog.DiscardHandler),
				Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true}},
				Retry:    reactor.RetryPolicy{RetryableCodes: []codes.Code{codes.Unavailable, codes.Internal}},
			})
			resp, p := callEcho(t, r, echo, &testpb.EchoRequest{}, nil)
			require.Equal(t, tc.code, status.Code(p.Err()), "%v", p.Err())
			if tc.code == codes.OK {
				require.Equal(t, "served", resp.GetMessage())
			}
			require.Equal(t, tc.attempts, b.Calls(echo.Path()))
			require.Equal(t, int32(tc.attempts), attempts.Load())
		})
	}
}

// TestBackendRegisteredBadMessages checks the failures of a registered method whose request
// or response is not what the service's handler expects: Internal, naming the fault.
func TestBackendRegisteredBadMessages(t *testing.T) {
	// BytesValue's field 1 is bytes; EchoRequest's is a string, which must be UTF-8.
	badRequest := calls.MustMethod[*wrapperspb.BytesValue, *testpb.EchoResponse]("/prpctest.Bad/Echo")
	notProto := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Bad/NotProto")
	desc := grpc.ServiceDesc{
		ServiceName: "prpctest.Bad",
		HandlerType: (*testpb.TestServiceServer)(nil),
		Methods: []grpc.MethodDesc{
			{MethodName: "Echo", Handler: testpb.TestService_ServiceDesc.Methods[0].Handler},
			{MethodName: "NotProto", Handler: func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
				if err := dec(new(testpb.EchoRequest)); err != nil {
					return nil, err
				}
				return "a string", nil
			}},
		},
	}
	b := reactortest.NewBackend()
	b.RegisterService(&desc, &unimplementedEcho{})
	r := reactortest.NewReactor(t, b, reactor.Config{})

	bad := reactor.Call(r, badRequest, &wrapperspb.BytesValue{Value: []byte{0xff}}, nil)
	reactortest.Flush(t, r)
	require.Equal(t, codes.Internal, status.Code(bad.Err()))
	require.Contains(t, status.Convert(bad.Err()).Message(), "reactortest: decoding the request: ")

	_, p := callEcho(t, r, notProto, &testpb.EchoRequest{}, nil)
	require.Equal(t, codes.Internal, status.Code(p.Err()))
	require.Equal(t, "reactortest: the handler of /prpctest.Bad/NotProto returned string, not a proto.Message", status.Convert(p.Err()).Message())
}
