package calls_test

import (
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
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
// code users expect; a server's own status keeps its code and message.
func ExampleError() {
	local := calls.NewError(calls.ErrTimeout, "/network.DataService/GetPlayer", "deadline exceeded after 1.5s", nil)
	fmt.Println(errors.Is(local, calls.ErrTimeout), status.Code(local))

	remote := calls.StatusError("/network.DataService/GetPlayer", status.Error(codes.NotFound, "no such player"), nil)
	fmt.Println(status.Code(remote), remote.Message())
	fmt.Println(remote)

	// Every Unavailable outcome matches ErrUnavailable: the server's own, or gRPC's when the
	// backend cannot be reached.
	down := calls.StatusError("/network.DataService/GetPlayer", status.Error(codes.Unavailable, "connection refused"), nil)
	fmt.Println(errors.Is(down, calls.ErrUnavailable), status.Code(down))
	// Output:
	// true DeadlineExceeded
	// NotFound no such player
	// prpc: /network.DataService/GetPlayer: NotFound: no such player
	// true Unavailable
}
