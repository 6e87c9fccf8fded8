package reactor_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// startHealthExampleServer is startExampleServer with grpc.health.v1 served too, whose Watch
// streams the server's status.
func startHealthExampleServer() (addr string, stop func()) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, exampleServer{})
	healthpb.RegisterHealthServer(s, health.NewServer())
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	return lis.Addr().String(), func() { s.Stop(); <-done }
}

// A streaming method, which prpc does not call, runs on the reactor's own connection through
// grpc-go's generated stub, beside prpc's calls. The stream is the program's: it reads it on
// a goroutine of its own and ends it before the reactor closes.
func ExampleReactor_Conn() {
	addr, stop := startHealthExampleServer()
	defer stop()
	r, err := reactor.New(reactor.Config{Target: addr, Credentials: reactor.Insecure()})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	ctx, endWatch := context.WithCancel(context.Background())
	defer endWatch() // before Close, deferred earlier
	watch, err := healthpb.NewHealthClient(r.Conn()).Watch(ctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		panic(err)
	}
	first, err := watch.Recv()
	if err != nil {
		panic(err)
	}
	fmt.Println("watch:", first.GetStatus())

	done := false
	reactor.Call(r, exampleEcho, &testpb.EchoRequest{Message: "beside the stream"}, nil).
		Then(func(resp *testpb.EchoResponse) { fmt.Println(resp.GetMessage()) }).
		OnError(func(err error) { fmt.Println("failed:", err) }).
		Always(func() { done = true })
	for !done {
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	// Output:
	// watch: SERVING
	// echo: beside the stream
}

// A program that dials its own connection gives it the service config prpc would generate,
// so that the reactor can take the Config's policies, a generated …Policies() included, with
// it as Config.Conn.
func ExampleConfig_ServiceConfigJSON() {
	cfg := reactor.Config{
		LoadBalancing: "round_robin",
		Policies:      []reactor.MethodPolicy{{Method: exampleEcho, Idempotent: true}},
		Retry:         reactor.RetryPolicy{MaxAttempts: 4},
	}
	sc, err := cfg.ServiceConfigJSON()
	if err != nil {
		panic(err)
	}
	fmt.Println(sc)

	cc, err := grpc.NewClient("dns:///db.internal:50051", // dialled lazily: nothing is sent here
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(sc), grpc.WithDisableServiceConfig())
	if err != nil {
		panic(err)
	}
	defer cc.Close() // after the reactor's Close: a Config.Conn stays its caller's

	cfg.Conn, cfg.ConnServiceConfig = cc, sc
	r, err := reactor.New(cfg)
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())
	// Output:
	// {"loadBalancingConfig":[{"round_robin":{}}],"methodConfig":[{"name":[{"service":"prpctest.TestService","method":"Echo"}],"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.050000000s","maxBackoff":"1.000000000s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}
}
