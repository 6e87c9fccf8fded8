package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/metrics/promprpc"
	"github.com/trixnew/prpc/reactor"
)

// The metrics client, clientGoMetrics: prpc-go with both metrics adapters registered over its
// reactor (and, in the loop suite, its loop), scraped while each of its trials runs, so that
// what the adapters cost a game shows as its ratio to prpc-go in the same trial.

// scrapeEvery is how often the metrics client's scraper reads both adapters while a trial
// runs: far more often than a metrics system scrapes a game server, so that the cost measured
// bounds a real scrape's from above.
const scrapeEvery = 100 * time.Millisecond

// metricsAdapters are both metrics adapters over one reactor, each as a program registers it:
// a promprpc Collector on a prometheus.Registry of its own, and an otelprpc Producer on an
// OpenTelemetry SDK ManualReader, registered with a MeterProvider of its own. Between
// startScraping and stopScraping a goroutine scrapes them: it gathers the registry and
// collects the reader at once, then every scrapeEvery.
type metricsAdapters struct {
	r         *reactor.Reactor
	registry  *prometheus.Registry
	collector *promprpc.Collector
	producer  *otelprpc.Producer
	reader    *sdkmetric.ManualReader
	provider  *sdkmetric.MeterProvider

	// The scraper's state: stop tells it to return, done is closed once it has; both are nil
	// while it does not run. scrapes counts its scrapes since it started, err is the first
	// scrape's error, if any; the scraper writes them, stopScraping reads them once done is
	// closed.
	stop, done chan struct{}
	scrapes    int
	err        error

	// rm is the scraper's collection, reused from one to the next as an exporter's reader
	// reuses its own.
	rm metricdata.ResourceMetrics
}

// newMetricsAdapters registers both adapters over r.
func newMetricsAdapters(r *reactor.Reactor) (*metricsAdapters, error) {
	m := &metricsAdapters{r: r, registry: prometheus.NewRegistry(), producer: otelprpc.NewProducer()}
	m.collector = promprpc.NewCollector(promprpc.WithReactor(r))
	if err := m.registry.Register(m.collector); err != nil {
		return nil, err
	}
	m.producer.AddReactor(r, "")
	m.reader = sdkmetric.NewManualReader(sdkmetric.WithProducer(m.producer))
	m.provider = sdkmetric.NewMeterProvider(sdkmetric.WithReader(m.reader))
	return m, nil
}

// addLoop registers l with both adapters too: the Producer adds it, and the registry's
// Collector is replaced by one over the reactor and l, since a Collector takes its loop when
// it is made. It must not be called while the scraper runs.
func (m *metricsAdapters) addLoop(l *loop.Loop) error {
	if m.stop != nil {
		panic("burst: addLoop while the metrics adapters are scraped")
	}
	m.registry.Unregister(m.collector)
	m.collector = promprpc.NewCollector(promprpc.WithReactor(m.r), promprpc.WithLoop(l))
	if err := m.registry.Register(m.collector); err != nil {
		return err
	}
	m.producer.AddLoop(l, "")
	return nil
}

// scrape gathers the registry and collects the reader once, as Prometheus and an
// OpenTelemetry exporter would, and checks that each returned the reactor's metrics.
func (m *metricsAdapters) scrape() error {
	families, err := m.registry.Gather()
	if err != nil {
		return fmt.Errorf("gathering the Prometheus registry: %w", err)
	}
	if len(families) == 0 {
		return errors.New("gathering the Prometheus registry: no metrics")
	}
	if err := m.reader.Collect(context.Background(), &m.rm); err != nil {
		return fmt.Errorf("collecting the OpenTelemetry reader: %w", err)
	}
	if len(m.rm.ScopeMetrics) == 0 || len(m.rm.ScopeMetrics[0].Metrics) == 0 {
		return errors.New("collecting the OpenTelemetry reader: no metrics")
	}
	return nil
}

// startScraping starts the scraper: a goroutine that scrapes at once, then every scrapeEvery,
// until stopScraping. It panics if the scraper runs already.
func (m *metricsAdapters) startScraping() {
	if m.stop != nil {
		panic("burst: the metrics adapters' scraper runs already")
	}
	m.stop, m.done = make(chan struct{}), make(chan struct{})
	m.scrapes, m.err = 0, nil
	go m.scrapeUntil(m.stop, m.done)
}

func (m *metricsAdapters) scrapeUntil(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(scrapeEvery)
	defer tick.Stop()
	for {
		err := m.scrape()
		m.scrapes++
		if err != nil {
			m.err = err
			return
		}
		select {
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// stopScraping stops the scraper and waits for it to return; it returns how many times it
// scraped and the error that stopped it, if any. It does nothing if the scraper does not run.
func (m *metricsAdapters) stopScraping() (scrapes int, err error) {
	if m.stop == nil {
		return 0, nil
	}
	close(m.stop)
	<-m.done
	m.stop, m.done = nil, nil
	return m.scrapes, m.err
}

// close stops the scraper if it runs and shuts the MeterProvider down.
func (m *metricsAdapters) close() error {
	_, err := m.stopScraping()
	return errors.Join(err, m.provider.Shutdown(context.Background()))
}
