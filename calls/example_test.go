package calls_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// Methods are declared once, at package level, with their request and response types and
// the path constant the gRPC code generator writes.
func ExampleMustMethod() {
	echo := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse](testpb.TestService_Echo_FullMethodName)
	fmt.Println(echo.Path())
	fmt.Println(echo.Service(), echo.Name())
	// Output:
	// /prpctest.TestService/Echo
	// prpctest.TestService Echo
}

// A path that gRPC would not route is refused with an error that quotes it.
func ExampleNewMethod() {
	_, err := calls.NewMethod[*testpb.EchoRequest, *testpb.EchoResponse]("prpctest.TestService.Echo")
	fmt.Println(err)
	// Output: prpc: invalid gRPC method path "prpctest.TestService.Echo": expected /package.Service/Method
}

// When the service is linked into the program, the types are checked against its
// declaration: here the response type is wrong.
func ExampleNewMethod_typeMismatch() {
	_, err := calls.NewMethod[*testpb.EchoRequest, *testpb.EchoRequest](testpb.TestService_Echo_FullMethodName)
	fmt.Println(err)
	// Output: prpc: method /prpctest.TestService/Echo: response type is prpctest.EchoRequest, the service declares prpctest.EchoResponse
}

// A call's error matches the sentinel of its condition with errors.Is and carries the gRPC
// code users expect; a server's own status keeps its code and message. The backend here is
// an in-memory one from package reactortest.
func ExampleError() {
	echo := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse](testpb.TestService_Echo_FullMethodName)
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if req.GetMessage() == "steve" {
			return nil, status.Error(codes.NotFound, "no such player")
		}
		return nil, status.Error(codes.Unavailable, "backend draining")
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())
	call := func(who string, opts *calls.Options) error {
		p := reactor.Call(r, echo, &testpb.EchoRequest{Message: who}, opts)
		if err := reactortest.Drain(r, 5*time.Second); err != nil {
			panic(err)
		}
		return p.Err()
	}

	// prpc refuses a negative timeout itself: the call is never sent.
	local := call("alex", &calls.Options{Timeout: -time.Second})
	fmt.Println(errors.Is(local, calls.ErrInvalidArgument), status.Code(local))

	remote := call("steve", nil)
	var ce *calls.Error
	if errors.As(remote, &ce) {
		fmt.Println(ce.Code(), ce.Message())
	}
	fmt.Println(remote)

	// Every Unavailable outcome matches ErrUnavailable: the server's own, or gRPC's when the
	// backend cannot be reached.
	down := call("alex", nil)
	fmt.Println(errors.Is(down, calls.ErrUnavailable), status.Code(down))
	// Output:
	// true InvalidArgument
	// NotFound no such player
	// prpc: /prpctest.TestService/Echo: NotFound: no such player
	// true Unavailable
}
