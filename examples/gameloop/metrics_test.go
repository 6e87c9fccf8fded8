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

// scrapeDuringRun plays a 2 s game against an in-process backend with -metrics-addr on an
// ephemeral loopback port, scrapes its /metrics once while it runs (at the first status line,
// after a second of play, when players have joined and saved), and returns what the scrape
// parsed, and the URL it scraped.
func scrapeDuringRun(t *testing.T) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	srv, err := server.Start(t.Context(), server.Options{})
	require.NoError(t, err)
	defer srv.Stop()
	cfg, err := parseFlags([]string{"-duration", "2s", "-players", "20", "-autosave", "300ms", "-metrics-addr", "127.0.0.1:0"}, io.Discard)
	require.NoError(t, err)
	var url string
	cfg.onMetrics = func(addr string) { url = "http://" + addr + "/metrics" }
	var families map[string]*dto.MetricFamily
	var scrapeErr error
	stdout := &statusHook{onStatus: func() { families, scrapeErr = scrape(t.Context(), url) }}
	var stderr bytes.Buffer

	code := play(t.Context(), func() {}, &cfg, srv, stdout, &lockedWriter{w: &stderr})
	t.Logf("stdout:\n%s\nstderr:\n%s", stdout.buf.String(), stderr.String()) // shown with -v
	require.Equal(t, 0, code, "stdout:\n%s\nstderr:\n%s", stdout.buf.String(), stderr.String())
	require.NotEmpty(t, url, "onMetrics was called")
	require.True(t, stdout.fired, "the game wrote a status line")
	require.NoError(t, scrapeErr)
	assert.Contains(t, stdout.buf.String(), "gameloop: serving metrics at "+url+"\n")
	return families, url
}

// With -metrics-addr, the game serves /metrics while it runs: prpc's metrics of its reactor
// and loop, with values; once the game is over, the server is gone.
func TestMetricsAddr(t *testing.T) {
	t.Parallel()
	families, url := scrapeDuringRun(t)

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

	_, err := scrape(t.Context(), url)
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
