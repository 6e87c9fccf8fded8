package promprpc

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/trixnew/prpc/reactor"
)

// The metrics a Collector sends. client_golang's constant metrics make a series' label pairs
// anew at every scrape, and a constant histogram takes its buckets as a map, which it turns
// into a pointer per bucket and two per bucket's values when the registry writes it: most of
// a scrape's garbage, which the game's heap pays for between scrapes. The Collector keeps each
// series' label pairs from one scrape to the next (a series' labels never change), and writes
// a histogram's buckets from two slices.

// maxLabelValues is the most variable labels a series of a Collector has: the reactor's name,
// the service, the method and the code.
const maxLabelValues = 4

// seriesKey names one series: its description and its variable labels' values.
type seriesKey struct {
	desc   *prometheus.Desc
	values [maxLabelValues]string
}

// labelCache keeps the label pairs of every series a Collector has sent, made once by
// prometheus.MakeLabelPairs. The slices are shared by every scrape's metrics and are never
// modified; each has no spare capacity, so that a wrapping registerer, which appends its own
// labels to a metric's, copies it rather than write past its end. The number of entries is
// bounded by the series, which are bounded by the methods, codes and backends.
type labelCache struct {
	mu    sync.Mutex
	pairs map[seriesKey][]*dto.LabelPair
}

// get returns the label pairs of d's series with the label values values, making them the
// first time.
func (c *labelCache) get(d *prometheus.Desc, values []string) []*dto.LabelPair {
	if len(values) > maxLabelValues {
		panic("promprpc: a series with more label values than a Collector makes")
	}
	k := seriesKey{desc: d}
	copy(k.values[:], values)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.pairs[k]; ok {
		return p
	}
	if c.pairs == nil {
		c.pairs = make(map[seriesKey][]*dto.LabelPair)
	}
	p := slices.Clip(prometheus.MakeLabelPairs(d, values))
	c.pairs[k] = p
	return p
}

// boundsCache keeps the histograms' upper bounds, shared by the buckets of every histogram a
// scrape sends and never modified: every snapshot's histograms have the same bounds, so they
// are kept once, and made anew only if a snapshot's ever differ.
type boundsCache struct {
	mu     sync.Mutex
	bounds []float64
}

// get returns a slice equal to bounds that no one modifies.
func (c *boundsCache) get(bounds []float64) []float64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !slices.Equal(c.bounds, bounds) {
		c.bounds = slices.Clone(bounds)
	}
	return c.bounds
}

// valueMetric is a counter's or a gauge's value in one scrape.
type valueMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	value  float64
	gauge  bool
}

// Desc returns the metric's description.
func (m *valueMetric) Desc() *prometheus.Desc { return m.desc }

// Write writes the metric's value and labels to out.
func (m *valueMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	if m.gauge {
		out.Gauge = &dto.Gauge{Value: &m.value}
	} else {
		out.Counter = &dto.Counter{Value: &m.value}
	}
	return nil
}

// histogramMetric is a histogram in one scrape: Prometheus's "le" buckets at upper (shared,
// never modified) with the running sums cum (its own), the +Inf bucket implied by the count.
type histogramMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair
	count  uint64
	sum    float64
	upper  []float64
	cum    []uint64
}

// Desc returns the metric's description.
func (m *histogramMetric) Desc() *prometheus.Desc { return m.desc }

// Write writes the histogram and its labels to out: its buckets in two allocations, however
// many there are.
func (m *histogramMetric) Write(out *dto.Metric) error {
	buckets := make([]dto.Bucket, len(m.upper))
	ptrs := make([]*dto.Bucket, len(m.upper))
	for i := range buckets {
		buckets[i].CumulativeCount = &m.cum[i]
		buckets[i].UpperBound = &m.upper[i]
		ptrs[i] = &buckets[i]
	}
	out.Histogram = &dto.Histogram{SampleCount: &m.count, SampleSum: &m.sum, Bucket: ptrs}
	out.Label = m.labels
	return nil
}

// newHistogramMetric returns h as d's histogram with the labels labels, its upper bounds
// from bounds.
func newHistogramMetric(d *prometheus.Desc, labels []*dto.LabelPair, h *reactor.Histogram, bounds *boundsCache) *histogramMetric {
	cum := h.Cumulative(nil)
	return &histogramMetric{
		desc:   d,
		labels: labels,
		count:  h.Count,
		sum:    h.Sum.Seconds(),
		upper:  bounds.get(h.Bounds),
		cum:    cum[:len(h.Bounds)], // the last running sum, +Inf's, is the count
	}
}
