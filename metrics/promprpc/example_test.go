package promprpc_test

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/metrics/promprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// printSeries GETs url and prints the series whose names start with prefix.
func printSeries(url, prefix string) {
	resp, err := http.Get(url)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	s := bufio.NewScanner(resp.Body)
	for s.Scan() {
		if strings.HasPrefix(s.Text(), prefix) {
			fmt.Println(s.Text())
		}
	}
}

// A game server registers a Collector over its reactor and loop, and serves the registry on
// /metrics for Prometheus to scrape. A program registers on the default registry and serves
// promhttp.Handler():
//
//	prometheus.MustRegister(promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l)))
//	http.Handle("/metrics", promhttp.Handler())
//
// This example uses a registry of its own, and an in-memory backend.
func Example() {
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if req.GetMessage() == "" {
			return nil, status.Error(codes.InvalidArgument, "no message")
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	l, err := loop.New(loop.Config{Reactors: []loop.Reactor{r}})
	if err != nil {
		panic(err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l)))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	// The game's calls; the loop would deliver them at its next tick.
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "Steve"}, nil)
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "Alex"}, nil)
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	if err := reactortest.Drain(r, 5*time.Second); err != nil {
		panic(err)
	}
	_ = r.Close(context.Background())

	printSeries(srv.URL, "prpc_call_completed_total")
	printSeries(srv.URL, "prpc_call_duration_seconds_count")
	// Output:
	// prpc_call_completed_total{rpc_grpc_status_code="0",rpc_method="Echo",rpc_service="prpctest.TestService",rpc_system="grpc"} 2
	// prpc_call_completed_total{rpc_grpc_status_code="3",rpc_method="Echo",rpc_service="prpctest.TestService",rpc_system="grpc"} 1
	// prpc_call_duration_seconds_count{rpc_method="Echo",rpc_service="prpctest.TestService",rpc_system="grpc"} 3
}

// A program with several reactors names each; every reactor metric then has a prpc_reactor
// label. Here one reactor serves the players' profiles, the other the world.
func ExampleWithNamedReactor() {
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	players, err := reactor.New(reactor.Config{Conn: b, MaxOutstanding: 1000})
	if err != nil {
		panic(err)
	}
	defer players.Close(context.Background())
	world, err := reactor.New(reactor.Config{Conn: b, MaxOutstanding: 50})
	if err != nil {
		panic(err)
	}
	defer world.Close(context.Background())

	reg := prometheus.NewRegistry()
	reg.MustRegister(promprpc.NewCollector(
		promprpc.WithNamedReactor("players", players),
		promprpc.WithNamedReactor("world", world),
	))
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()

	printSeries(srv.URL, "prpc_calls_max_outstanding")
	// Output:
	// prpc_calls_max_outstanding{prpc_reactor="players"} 1000
	// prpc_calls_max_outstanding{prpc_reactor="world"} 50
}
