package otelprpc_test

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// getCounts are the Get counts of one collection.
type getCounts struct {
	submitted, completed int64
	durations            uint64
}

// getCountsOf returns the Get counts of res, a Producer's collection of one unnamed reactor.
func getCountsOf(res []metricdata.ScopeMetrics) (getCounts, bool) {
	var c getCounts
	found := false
	get := methodAttrs("Get")
	for _, sm := range res {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					switch {
					case m.Name == "prpc.call.submitted" && p.Attributes.Equals(&get):
						c.submitted, found = p.Value, true
					case m.Name == "prpc.call.completed":
						if v, ok := p.Attributes.Value("rpc.method"); ok && v.AsString() == "Get" {
							if r, named := p.Attributes.Value("prpc.reactor"); !named || r.AsString() == "" {
								c.completed += p.Value
							}
						}
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if m.Name == "prpc.call.duration" && p.Attributes.Equals(&get) {
						c.durations = p.Count
					}
				}
			}
		}
	}
	return c, found
}

// TestConcurrentCollections collects from two goroutines, and through a reader from a third,
// while the host goroutine makes calls and ticks and a fourth goroutine adds and removes
// another reactor. Every collection is consistent (completed calls never exceed submitted
// ones, and each delivered call is in the duration histogram), counts never decrease from
// one collection to the next, and the last collection has every call. Run it with -race.
func TestConcurrentCollections(t *testing.T) {
	const calls = 500
	b := reactortest.NewBackend()
	reactortest.Handle(b, get, func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		return wrapperspb.String("item"), nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{})
	other := reactortest.NewReactor(t, b, reactor.Config{})
	p := otelprpc.NewProducer(otelprpc.WithBackends())
	p.AddReactor(r, "")
	reader := newReader(t, p)

	done := make(chan struct{})
	var wg sync.WaitGroup
	collector := func(produce func() ([]metricdata.ScopeMetrics, error)) {
		defer wg.Done()
		var last getCounts
		for {
			select {
			case <-done:
				return
			default:
			}
			res, err := produce()
			if err != nil {
				t.Errorf("collecting: %v", err)
				return
			}
			c, ok := getCountsOf(res)
			if !ok {
				continue // no Get yet
			}
			if c.completed > c.submitted || int64(c.durations) != c.completed {
				t.Errorf("inconsistent collection: %+v", c)
				return
			}
			if c.submitted < last.submitted || c.completed < last.completed || c.durations < last.durations {
				t.Errorf("counts decreased: %+v, then %+v", last, c)
				return
			}
			last = c
		}
	}
	wg.Add(4)
	go collector(func() ([]metricdata.ScopeMetrics, error) { return p.Produce(context.Background()) })
	go collector(func() ([]metricdata.ScopeMetrics, error) { return p.Produce(context.Background()) })
	go collector(func() ([]metricdata.ScopeMetrics, error) {
		var rm metricdata.ResourceMetrics
		err := reader.Collect(context.Background(), &rm)
		return rm.ScopeMetrics, err
	})
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			p.AddReactor(other, "other")
			p.RemoveReactor(other)
		}
	}()

	for i := range calls {
		reactor.Call(r, get, wrapperspb.String("a"), nil)
		if i%10 == 0 {
			r.Tick(0)
		}
	}
	reactortest.Flush(t, r)
	close(done)
	wg.Wait()

	res, err := p.Produce(context.Background())
	require.NoError(t, err)
	c, ok := getCountsOf(res)
	require.True(t, ok)
	require.Equal(t, getCounts{submitted: calls, completed: calls, durations: calls}, c)
	got := collect(t, reader)
	empty := *attribute.EmptySet()
	require.Equal(t, 0.0, gauge(t, got["prpc.calls.pending"], empty))
}
