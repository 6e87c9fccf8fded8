package reactortest_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/trixnew/prpc/calls"
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

// A test times a call out without waiting for real time: the Backend's handler holds the call
// until the test is done, WaitTimers waits until the reactor has set the timer of the call's
// deadline, and Advance moves the clock past it. The reactor sets one timer for all its
// calls, so the wait is for 1 timer, whatever the number of calls; on a reactor that had no
// timer active before the call, as here, that timer is the call's.
func ExampleManualClock_WaitTimers() {
	clock := reactortest.NewManualClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	testDone := make(chan struct{})
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		<-testDone // a backend that does not answer in time
		return &testpb.EchoResponse{}, nil
	})
	r, err := reactor.New(reactor.Config{Conn: b, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())
	defer close(testDone) // runs first: ends the handler, which waits for it, so that its goroutine does not outlive the example

	var callErr error
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "Steve"}, &calls.Options{Timeout: 2 * time.Second}).
		OnError(func(err error) { callErr = err })

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // bounds a broken test
	defer cancel()
	if err := clock.WaitTimers(ctx, 1); err != nil {
		panic(err)
	}
	clock.Advance(2 * time.Second)
	if err := reactortest.Drain(r, 5*time.Second); err != nil { // Flush(t, r) in a test
		panic(err)
	}
	fmt.Println(errors.Is(callErr, calls.ErrTimeout))
	// Output: true
}

// Calls with different timeouts are timed out one deadline at a time. The reactor's one timer
// is due at the earliest deadline; WaitTimerBy waits until it is, which holds even where a
// timer left by an earlier call is active, and it is set again for the next deadline after
// each Advance. The handlers report that they hold the calls, so the test knows the reactor
// has taken them.
func ExampleManualClock_WaitTimerBy() {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := reactortest.NewManualClock(start)
	testDone, entered := make(chan struct{}), make(chan string, 2)
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		entered <- req.GetMessage()
		<-testDone
		return &testpb.EchoResponse{}, nil
	})
	r, err := reactor.New(reactor.Config{Conn: b, Clock: clock})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())
	defer close(testDone)

	timedOut := map[string]bool{}
	for _, c := range []struct {
		name    string
		timeout time.Duration
	}{{"fast", time.Second}, {"slow", 3 * time.Second}} {
		reactor.Call(r, echo, &testpb.EchoRequest{Message: c.name}, &calls.Options{Timeout: c.timeout}).
			OnError(func(err error) { timedOut[c.name] = errors.Is(err, calls.ErrTimeout) })
	}
	<-entered // step 1: the reactor has taken both calls
	<-entered

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := clock.WaitTimerBy(ctx, start.Add(time.Second)); err != nil { // step 2
		panic(err)
	}
	clock.Advance(time.Second) // step 3
	<-r.Ready()
	r.Tick(time.Second)
	fmt.Println("after 1s:", timedOut)

	if err := clock.WaitTimerBy(ctx, start.Add(3*time.Second)); err != nil {
		panic(err)
	}
	clock.Advance(2 * time.Second)
	if err := reactortest.Drain(r, 5*time.Second); err != nil {
		panic(err)
	}
	fmt.Println("after 3s:", timedOut)
	// Output:
	// after 1s: map[fast:true]
	// after 3s: map[fast:true slow:true]
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
