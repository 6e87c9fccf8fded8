package otelprpc_test

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// benchReactor returns a reactor whose methods methods have each delivered calls calls, a
// few of them failed, so that each has every series it can have but hedges' and backends'.
func benchReactor(b *testing.B, methods, calls int) *reactor.Reactor {
	backend := reactortest.NewBackend()
	r, err := reactor.New(reactor.Config{Conn: backend})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = r.Close(context.Background()) })
	for i := range methods {
		m := callsMethod(i)
		reactortest.Handle(backend, m, func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
			return req, nil
		})
		for range calls {
			reactor.Call(r, m, wrapperspb.String("x"), nil)
		}
		if err := reactortest.Drain(r, reactortest.FlushTimeout); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// callsMethod returns the descriptor of method i of a benchmark service.
func callsMethod(i int) *calls.Method[*wrapperspb.StringValue, *wrapperspb.StringValue] {
	return calls.MustMethod[*wrapperspb.StringValue, *wrapperspb.StringValue](fmt.Sprintf("/game.Bench/Method%d", i))
}

// BenchmarkProduce measures one collection of a reactor with a handful of methods, against
// the reactor's Stats alone, which it reads: with a few calls per method, and with their
// latency windows full (1,024 calls each), which Stats sorts.
func BenchmarkProduce(b *testing.B) {
	for _, calls := range []int{10, 1024} {
		r := benchReactor(b, 5, calls)
		b.Run(fmt.Sprintf("methods=5/calls=%d/Stats", calls), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = r.Stats()
			}
		})
		b.Run(fmt.Sprintf("methods=5/calls=%d/Produce", calls), func(b *testing.B) {
			p := otelprpc.NewProducer()
			p.AddReactor(r, "")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Produce(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
