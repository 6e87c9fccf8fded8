package otelprpc

import (
	"time"

	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// StatsSource is the source of a reactor added to a Producer, fed with snapshots by a test
// instead of reading them from a reactor.
type StatsSource struct {
	s        *reactorSource
	backends bool
}

// NewStatsSource returns the source of a reactor added at start with name, as AddReactor
// makes it, with or without WithBackends.
func NewStatsSource(name string, start time.Time, backends bool) *StatsSource {
	return &StatsSource{s: newReactorSource(nil, name, start), backends: backends}
}

// Collect returns the metrics of one collection that read st at read and finished at now.
func (x *StatsSource) Collect(st reactor.Stats, read, now time.Time) []metricdata.Metrics {
	c := new(collection)
	x.s.add(c, &st, now, x.backends)
	x.s.lastRead = read
	return c.metrics()
}

// LoopMetrics returns the metrics of one collection of a loop named name, added at start,
// whose Stats and TickDurations were st and h at now.
func LoopMetrics(name string, start, now time.Time, st loop.Stats, h reactor.Histogram) []metricdata.Metrics {
	c := new(collection)
	(&loopSource{name: name, start: start, attrs: nameSet(keyLoop, name)}).add(c, &st, &h, now)
	return c.metrics()
}
