package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/metrics/promprpc"
	"github.com/trixnew/prpc/reactor"
)

// metricsServer serves the game's metrics for Prometheus (-metrics-addr) at /metrics: prpc's,
// through promprpc, over the game's reactor and loop, with the Go runtime's and the process's,
// as promhttp.Handler serves them from the default registry. It has a registry of its own, so
// that tests can run several games in one process.
type metricsServer struct {
	srv  *http.Server
	addr string        // the address it listens on, with the port the system chose for :0
	done chan struct{} // closed when Serve has returned
}

// startMetrics listens on addr and serves the metrics of r and l there until stop. An error
// of Serve's is written to stderr, which must be safe for concurrent writes; it does not stop
// the game.
func startMetrics(addr string, r *reactor.Reactor, l *loop.Loop, stderr io.Writer) (*metricsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l), promprpc.WithBackends()),
	)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	m := &metricsServer{
		srv:  &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		addr: ln.Addr().String(),
		done: make(chan struct{}),
	}
	go func() {
		defer close(m.done)
		if err := m.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(stderr, "gameloop: serving metrics: %v\n", err)
		}
	}()
	return m, nil
}

// stop closes the server and its connections, and waits until Serve has returned.
func (m *metricsServer) stop() {
	_ = m.srv.Close()
	<-m.done
}
