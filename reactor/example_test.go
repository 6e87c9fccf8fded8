package reactor_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// exampleServer is a tiny backend on an ephemeral loopback port for the examples.
type exampleServer struct {
	testpb.UnimplementedTestServiceServer
}

func (exampleServer) Echo(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	if req.GetBlock() {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return &testpb.EchoResponse{Message: "echo: " + req.GetMessage()}, nil
}

func startExampleServer() (addr string, stop func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, exampleServer{})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	return lis.Addr().String(), func() { s.Stop(); <-done }
}

// exampleReactor starts the example backend and a reactor for it, as ExampleCall shows in
// full; stop closes both.
func exampleReactor(cfg reactor.Config) (r *reactor.Reactor, stop func()) {
	addr, stopServer := startExampleServer()
	cfg.Target, cfg.Credentials = addr, reactor.Insecure()
	r, err := reactor.New(cfg)
	if err != nil {
		panic(err)
	}
	return r, func() { r.Close(context.Background()); stopServer() }
}

// The methods a program calls are declared once.
var exampleEcho = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

// A game loop submits calls without blocking and runs their callbacks in Tick.
func ExampleCall() {
	addr, stop := startExampleServer()
	defer stop()

	r, err := reactor.New(reactor.Config{Target: addr, Credentials: reactor.Insecure()})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	done := false
	reactor.Call(r, exampleEcho, &testpb.EchoRequest{Message: "hello"}, &calls.Options{
		Timeout:  time.Second,
		Metadata: metadata.Pairs("server-id", "lobby-1"),
	}).
		Then(func(resp *testpb.EchoResponse) { fmt.Println(resp.GetMessage()) }).
		OnError(func(err error) { fmt.Println("failed:", err) }).
		Always(func() { done = true })

	// The game loop: one Tick per server tick, here woken early by Ready.
	for !done {
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	// Output: echo: hello
}

// A call that outlives its timeout fails with ErrTimeout, which carries DeadlineExceeded.
func ExampleCall_timeout() {
	r, stop := exampleReactor(reactor.Config{})
	defer stop()

	p := reactor.Call(r, exampleEcho, &testpb.EchoRequest{Block: true}, &calls.Options{Timeout: 50 * time.Millisecond})
	p.OnError(func(err error) {
		fmt.Println(errors.Is(err, calls.ErrTimeout))
	})
	for p.State() == calls.Pending {
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	// Output: true
}

// Bad input fails the call at once, with an error naming the problem; its callbacks still
// run only in Tick.
func ExampleCall_rejected() {
	r, err := reactor.New(reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure()})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	p := reactor.Call(r, exampleEcho, &testpb.EchoRequest{}, &calls.Options{Timeout: -time.Second})
	fmt.Println(p.State(), errors.Is(p.Err(), calls.ErrInvalidArgument))
	// Output: failed true
}

// Tick delivers completions in order under a time budget, and reports what it left.
func ExampleReactor_Tick() {
	r, stop := exampleReactor(reactor.Config{})
	defer stop()

	settled := 0
	for range 3 {
		reactor.Call(r, exampleEcho, &testpb.EchoRequest{Message: "x"}, nil).Always(func() { settled++ })
	}
	delivered := 0
	for settled < 3 {
		<-r.Ready()
		rep := r.Tick(0) // a budget ≤ 0 delivers exactly one
		delivered += rep.Delivered
	}
	fmt.Println(delivered)
	// Output: 3
}

// Close stops admitting, lets calls in flight finish while its context allows, and runs
// every remaining callback before it returns.
func ExampleReactor_Close() {
	addr, stop := startExampleServer()
	defer stop()
	r, err := reactor.New(reactor.Config{Target: addr, Credentials: reactor.Insecure()})
	if err != nil {
		panic(err)
	}
	reactor.Call(r, exampleEcho, &testpb.EchoRequest{Block: true}, nil).
		OnError(func(err error) { fmt.Println("cut off:", errors.Is(err, calls.ErrClosed)) })

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	fmt.Println(r.Close(ctx))
	// Output:
	// cut off: true
	// prpc: Close cut off 1 call still running: context deadline exceeded
}

// Shutdown drains before it closes: a final save chained from the callback of a save still in
// flight when the host stops is served, not rejected.
func ExampleReactor_Shutdown() {
	r, stop := exampleReactor(reactor.Config{})
	defer stop()

	reactor.Call(r, exampleEcho, &testpb.EchoRequest{Message: "autosave"}, nil).
		Then(func(resp *testpb.EchoResponse) {
			fmt.Println(resp.GetMessage())
			reactor.Call(r, exampleEcho, &testpb.EchoRequest{Message: "final save"}, nil).
				Then(func(resp *testpb.EchoResponse) { fmt.Println(resp.GetMessage()) })
		})

	// The host stops: Shutdown runs the callbacks as calls settle until nothing is left.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fmt.Println(r.Shutdown(ctx), r.Stats().Drained)
	// Output:
	// echo: autosave
	// echo: final save
	// <nil> 2
}

// Stats is a snapshot that any goroutine may take.
func ExampleReactor_Stats() {
	r, stop := exampleReactor(reactor.Config{Workers: 3})
	defer stop()

	p := reactor.Call(r, exampleEcho, &testpb.EchoRequest{Message: "x"}, nil)
	for p.State() == calls.Pending {
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	st := r.Stats()
	fmt.Println(st.Submitted, st.Succeeded, st.Pending, len(st.Invokers))
	// Output: 1 1 0 3
}
