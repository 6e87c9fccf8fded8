package reactor

import (
	"time"

	"github.com/trixnew/prpc/internal/dial"
)

// ServiceConfigOf exposes the service config prpc generates for a connection it dials, for
// tests: its balancer reports to a table of id 0.
func ServiceConfigOf(cfg Config) (string, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return "", err
	}
	return cfg.serviceConfig(&dial.SubconnTable{}), nil
}

// LaneGrace exposes laneGrace, how long Close waits for invoker lanes once it has cut every
// call off, for tests.
const LaneGrace = laneGrace

// LimitPlaces returns how many places under Config.AdaptiveLimit lanes hold, for tests: a
// lane gives its place back when it next takes a call, just after its call was queued for
// Tick.
func LimitPlaces(r *Reactor) int {
	_, places := r.work.Limit()
	return places
}

// SetOnReadyGrace sets how long r's Shutdown and Close wait for a call of Config.OnReady still
// running, counted from when they began (onReadyGrace by default), for tests: call it before
// Shutdown or Close, with Config.OnReady set.
func SetOnReadyGrace(r *Reactor, d time.Duration) { r.notify.grace = d }

// BackendIdleGrace exposes backendIdleGrace, how long a backend's row in Stats.Backends
// outlives its last transport call, for tests.
const BackendIdleGrace = backendIdleGrace
