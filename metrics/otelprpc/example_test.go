package otelprpc_test

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// A Producer is registered on a reader and reads the reactors added to it at each
// collection. A program passes its exporter's reader (sdkmetric.NewPeriodicReader(exp,
// sdkmetric.WithProducer(p))); here a ManualReader collects once, after one call to an
// in-memory backend.
func Example() {
	get := calls.MustMethod[*wrapperspb.StringValue, *wrapperspb.StringValue]("/game.Inventory/Get")
	b := reactortest.NewBackend()
	reactortest.Handle(b, get, func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("sword"), nil
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	p := otelprpc.NewProducer(otelprpc.WithReactor(r))
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(p))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())

	reactor.Call(r, get, wrapperspb.String("slot 1"), nil)
	if err := reactortest.Drain(r, 5*time.Second); err != nil {
		panic(err)
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		panic(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Histogram[float64]:
				if m.Name == "prpc.call.duration" {
					p := d.DataPoints[0]
					fmt.Printf("%s {%s} count=%d in %d buckets\n", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Count, len(p.BucketCounts))
				}
			case metricdata.Sum[int64]:
				if m.Name == "prpc.call.completed" {
					p := d.DataPoints[0]
					fmt.Printf("%s {%s} %d\n", m.Name, p.Attributes.Encoded(attribute.DefaultEncoder()), p.Value)
				}
			case metricdata.Gauge[int64]:
				if m.Name == "prpc.calls.pending" {
					fmt.Printf("%s %d\n", m.Name, d.DataPoints[0].Value)
				}
			}
		}
	}
	// Output:
	// prpc.call.duration {rpc.method=Get,rpc.service=game.Inventory,rpc.system=grpc} count=1 in 42 buckets
	// prpc.call.completed {rpc.grpc.status_code=0,rpc.method=Get,rpc.service=game.Inventory,rpc.system=grpc} 1
	// prpc.calls.pending 0
}

// A program with several reactors names each, so that their series differ by the attribute
// prpc.reactor.
func ExampleProducer_AddReactor() {
	b := reactortest.NewBackend()
	lobby, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer lobby.Close(context.Background())
	world, err := reactor.New(reactor.Config{Conn: b, MaxOutstanding: 1024})
	if err != nil {
		panic(err)
	}
	defer world.Close(context.Background())

	p := otelprpc.NewProducer()
	p.AddReactor(lobby, "lobby")
	p.AddReactor(world, "world")

	res, err := p.Produce(context.Background())
	if err != nil {
		panic(err)
	}
	for _, m := range res[0].Metrics {
		if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == "prpc.calls.max_outstanding" {
			for _, dp := range g.DataPoints {
				fmt.Printf("%s {%s} %d\n", m.Name, dp.Attributes.Encoded(attribute.DefaultEncoder()), dp.Value)
			}
		}
	}
	// Output:
	// prpc.calls.max_outstanding {prpc.reactor=lobby} 4096
	// prpc.calls.max_outstanding {prpc.reactor=world} 1024
}
