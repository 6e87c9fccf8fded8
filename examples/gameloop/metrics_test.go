package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/examples/dataservice/server"
)

// scrape GETs url, in the text format, and parses what it returns.
func scrape(ctx context.Context, url string) (map[string]*dto.MetricFamily, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain; version=0.0.4")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	return p.TextToMetricFamilies(resp.Body)
}

// statusHook is the stdout of a game that calls onStatus when the game writes its first
// status line ("t=1s …"), on the loop goroutine, before the write returns: the game is running
// then, and stays so until onStatus returns.
type statusHook struct {
	mu       sync.Mutex
	buf      bytes.Buffer
	fired    bool
	onStatus func()
}

func (h *statusHook) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.fired && bytes.HasPrefix(p, []byte("t=1s ")) {
		h.fired = true
		h.onStatus()
	}
	return h.buf.Write(p)
}

// gameScrape is a game run by scrapeDuringRun and the scrape taken during it.
type gameScrape struct {
	families map[string]*dto.MetricFamily
	url      string // of /metrics
	res      result
}

// scrapeDuringRun plays a 2 s game with -metrics-addr on an ephemeral loopback port, against
// target, or an in-process backend if target is empty, and scrapes its /metrics once while it
// runs: at the first status line, after a second of play, when players have joined and saved.
func scrapeDuringRun(t *testing.T, target string) gameScrape {
	t.Helper()
	args := []string{"-duration", "2s", "-players", "20", "-autosave", "300ms", "-metrics-addr", "127.0.0.1:0"}
	var srv *server.Server
	if target == "" {
		var err error
		srv, err = server.Start(t.Context(), server.Options{})
		require.NoError(t, err)
		defer srv.Stop()
	} else {
		args = append(args, "-target", target)
	}
	cfg, err := parseFlags(args, io.Discard)
	require.NoError(t, err)
	var g gameScrape
	cfg.onMetrics = func(addr string) { g.url = "http://" + addr + "/metrics" }
	var scrapeErr error
	stdout := &statusHook{onStatus: func() { g.families, scrapeErr = scrape(t.Context(), g.url) }}
	var stderr bytes.Buffer

	g.res.code = play(t.Context(), func() {}, &cfg, srv, stdout, &lockedWriter{w: &stderr})
	g.res.stdout, g.res.stderr = stdout.buf.String(), stderr.String()
	t.Logf("stdout:\n%s\nstderr:\n%s", g.res.stdout, g.res.stderr) // shown with -v
	require.NotEmpty(t, g.url, "onMetrics was called")
	require.True(t, stdout.fired, "the game wrote a status line")
	require.NoError(t, scrapeErr)
	assert.Contains(t, g.res.stdout, "gameloop: serving metrics at "+g.url+"\n")
	return g
}

// With -metrics-addr, the game serves /metrics while it runs: prpc's metrics of its reactor
// and loop, with values; once the game is over, the server is gone.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	g := scrapeDuringRun(t, "")
	requirePassed(t, g.res)
	families := g.families

	completed := families["prpc_call_completed_total"]
	require.NotNil(t, completed, "prpc_call_completed_total in the scrape")
	var ok float64
	for _, m := range completed.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "rpc_grpc_status_code" && lp.GetValue() == "0" {
				ok += m.GetCounter().GetValue()
			}
		}
	}
	assert.Positive(t, ok, "calls completed with a response")

	duration := families["prpc_call_duration_seconds"]
	require.NotNil(t, duration, "prpc_call_duration_seconds in the scrape")
	require.Equal(t, dto.MetricType_HISTOGRAM, duration.GetType())
	var count uint64
	var inBuckets bool // a finite bucket counts a call
	for _, m := range duration.GetMetric() {
		h := m.GetHistogram()
		count += h.GetSampleCount()
		for _, b := range h.GetBucket() {
			inBuckets = inBuckets || b.GetCumulativeCount() > 0
		}
	}
	assert.Positive(t, count, "calls in the duration histogram")
	assert.True(t, inBuckets, "a prpc_call_duration_seconds_bucket with calls")

	ticks := families["prpc_loop_ticks_total"]
	require.NotNil(t, ticks)
	require.Len(t, ticks.GetMetric(), 1)
	assert.GreaterOrEqual(t, ticks.GetMetric()[0].GetCounter().GetValue(), 20.0, "a second of ticks at 20 TPS")
	assert.Contains(t, families, "prpc_backend_calls_total", "the counts by backend")
	assert.Contains(t, families, "go_goroutines", "the Go runtime's metrics")

	_, err := scrape(t.Context(), g.url)
	require.Error(t, err, "the metrics server stopped with the game")
}

// Without -metrics-addr, no server: the game says nothing of metrics.
func TestMetricsOffByDefault(t *testing.T) {
	t.Parallel()
	res := runGame(t.Context(), "-duration", "200ms", "-players", "2")
	requirePassed(t, res)
	assert.NotContains(t, res.stdout, "metrics")
}

// A -metrics-addr the game cannot listen on fails the run at once, saying why.
func TestMetricsAddrInUse(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()

	res := runGame(t.Context(), "-duration", "200ms", "-players", "2", "-metrics-addr", ln.Addr().String())
	require.Equal(t, 1, res.code, "stdout:\n%s\nstderr:\n%s", res.stdout, res.stderr)
	assert.Contains(t, res.stderr, "gameloop: serving metrics: listen tcp "+ln.Addr().String())
	assert.False(t, strings.Contains(res.stdout, "players at"), "the game did not start")
}
