package reactortest_test

import (
	"context"
	"fmt"
	"time"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// Game logic that makes calls is tested without a network: register a func per method on a
// Backend, submit through a reactor, then drain (tick until every call is delivered) and
// assert on what the callbacks did. In a test, NewReactor and Flush do the set-up, clean-up
// and failure reporting.
func Example() {
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: "welcome " + req.GetMessage()}, nil
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	var greeting string
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "Steve"}, nil).
		Then(func(resp *testpb.EchoResponse) { greeting = resp.GetMessage() })
	if err := reactortest.Drain(r, 5*time.Second); err != nil {
		panic(err)
	}
	fmt.Println(greeting)
	// Output: welcome Steve
}

// lobbyServer is a fake of the server a test replaces: the type a real server registers,
// with only the methods the test needs; the embedded UnimplementedTestServiceServer answers
// the others with Unimplemented.
type lobbyServer struct {
	testpb.UnimplementedTestServiceServer
}

func (lobbyServer) Echo(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return &testpb.EchoResponse{Message: "welcome " + req.GetMessage()}, nil
}

// A Backend is a grpc.ServiceRegistrar: the registration function protoc-gen-go-grpc
// generates registers a fake server on it as on a grpc.Server, and the Backend serves the
// server's unary methods to a reactor.
func ExampleBackend_RegisterService() {
	b := reactortest.NewBackend()
	testpb.RegisterTestServiceServer(b, lobbyServer{})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	reactor.Call(r, echo, &testpb.EchoRequest{Message: "Alex"}, nil).
		Then(func(resp *testpb.EchoResponse) { fmt.Println(resp.GetMessage()) }).
		OnError(func(err error) { fmt.Println("failed:", err) })
	if err := reactortest.Drain(r, 5*time.Second); err != nil {
		panic(err)
	}
	fmt.Println(b.Calls(testpb.TestService_Echo_FullMethodName), "call")
	// Output:
	// welcome Alex
	// 1 call
}
