package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// dashboardFile is the Grafana dashboard of examples/grafana, from this package's directory.
const dashboardFile = "../grafana/prpc.json"

// dashboardDS is how the dashboard's panels name their data source: its template variable.
const dashboardDS = "${DS_PROMETHEUS}"

// The dashboard's JSON, as far as the test reads it.
type (
	dashboard struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []variable `json:"list"`
		} `json:"templating"`
	}
	panel struct {
		ID         int         `json:"id"`
		Type       string      `json:"type"`
		Title      string      `json:"title"`
		Datasource *datasource `json:"datasource"`
		Targets    []struct {
			Expr       string      `json:"expr"`
			Datasource *datasource `json:"datasource"`
		} `json:"targets"`
		Panels []panel `json:"panels"` // a collapsed row's
	}
	datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	}
	variable struct {
		Name       string          `json:"name"`
		Type       string          `json:"type"`
		Query      json.RawMessage `json:"query"` // a string, or {"query": "…"}
		Datasource *datasource     `json:"datasource"`
	}
)

// query returns a query variable's PromQL.
func (v *variable) query() (string, error) {
	var s string
	if err := json.Unmarshal(v.Query, &s); err == nil {
		return s, nil
	}
	var q struct {
		Query string `json:"query"`
	}
	err := json.Unmarshal(v.Query, &q)
	return q.Query, err
}

// promqlAggregations are PromQL's aggregation operators, which a by or without clause may
// follow instead of their parenthesis.
var promqlAggregations = []string{"sum", "min", "max", "avg", "group", "stddev", "stdvar", "count",
	"count_values", "bottomk", "topk", "quantile", "limitk", "limit_ratio"}

// promqlKeywords are PromQL's other words that are not metric names; labelLists are those
// followed by a parenthesised list of label names.
var (
	promqlKeywords = []string{"bool", "offset", "and", "or", "unless", "atan2", "inf", "nan", "start", "end"}
	labelLists     = []string{"by", "without", "on", "ignoring", "group_left", "group_right"}
)

// promqlMetricNames returns the metric names a PromQL expression selects, in order of first
// appearance: the identifiers that are neither functions (followed by a parenthesis), nor
// operators or keywords, nor inside a label matcher ({…}), a range or subquery ([…]), a
// label list (by (…), on (…), …), a string, a number or a Grafana variable ($x, ${x}).
// Grafana's label_values(metric, label) selects its first argument.
func promqlMetricNames(expr string) ([]string, error) {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	isIdentStart := func(c byte) bool { return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
	isIdent := func(c byte) bool { return isIdentStart(c) || '0' <= c && c <= '9' }
	depth := 0 // of the parentheses of calls and grouping
	for i := 0; i < len(expr); {
		c := expr[i]
		switch {
		case c == '(' || c == ')':
			if c == '(' {
				depth++
			} else if depth--; depth < 0 {
				return nil, fmt.Errorf("unbalanced ) at %d in %q", i, expr)
			}
			i++
		case c == '"' || c == '\'' || c == '`':
			end, err := skipString(expr, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '{' || c == '[':
			end, err := skipGroup(expr, i)
			if err != nil {
				return nil, err
			}
			i = end
		case c == '$': // a Grafana variable: $name or ${name}
			i++
			if i < len(expr) && expr[i] == '{' {
				end, err := skipGroup(expr, i)
				if err != nil {
					return nil, err
				}
				i = end
			}
			for i < len(expr) && isIdent(expr[i]) {
				i++
			}
		case '0' <= c && c <= '9' || c == '.': // a number or duration: 0.99, 1e-05, 5m
			for i < len(expr) && (isIdent(expr[i]) || expr[i] == '.') {
				i++
			}
		case isIdentStart(c):
			j := i
			for j < len(expr) && isIdent(expr[j]) {
				j++
			}
			word := expr[i:j]
			k := j
			for k < len(expr) && (expr[k] == ' ' || expr[k] == '\t' || expr[k] == '\n') {
				k++
			}
			paren := k < len(expr) && expr[k] == '('
			switch {
			case slices.Contains(labelLists, word):
				if paren {
					end, err := skipGroup(expr, k)
					if err != nil {
						return nil, err
					}
					j = end
				}
			case word == "label_values" && paren:
				end, err := skipGroup(expr, k)
				if err != nil {
					return nil, err
				}
				if args := splitArgs(expr[k+1 : end-1]); len(args) == 2 {
					inner, err := promqlMetricNames(args[0])
					if err != nil {
						return nil, err
					}
					for _, n := range inner {
						add(n)
					}
				}
				j = end
			case paren, slices.Contains(promqlAggregations, word), slices.Contains(promqlKeywords, word):
				// A function, an aggregation or a keyword.
			default:
				add(word)
			}
			i = j
		default:
			i++
		}
	}
	if depth != 0 {
		return nil, fmt.Errorf("unclosed ( in %q", expr)
	}
	return names, nil
}

// skipString returns the index just past the string literal that starts at expr[i].
func skipString(expr string, i int) (int, error) {
	q := expr[i]
	for j := i + 1; j < len(expr); j++ {
		switch {
		case expr[j] == '\\' && q != '`':
			j++
		case expr[j] == q:
			return j + 1, nil
		}
	}
	return 0, fmt.Errorf("unterminated string at %d in %q", i, expr)
}

// skipGroup returns the index just past the bracket that closes the one at expr[i] ({, [ or
// (), skipping strings and nested brackets.
func skipGroup(expr string, i int) (int, error) {
	depth := 0
	for j := i; j < len(expr); {
		switch expr[j] {
		case '"', '\'', '`':
			end, err := skipString(expr, j)
			if err != nil {
				return 0, err
			}
			j = end
			continue
		case '{', '[', '(':
			depth++
		case '}', ']', ')':
			depth--
			if depth == 0 {
				return j + 1, nil
			}
		}
		j++
	}
	return 0, fmt.Errorf("unclosed %q at %d in %q", expr[i], i, expr)
}

// splitArgs splits a function's arguments at the commas outside brackets and strings.
func splitArgs(s string) []string {
	var args []string
	start := 0
	for i := 0; i < len(s); {
		switch s[i] {
		case '"', '\'', '`':
			end, err := skipString(s, i)
			if err != nil {
				return nil
			}
			i = end
			continue
		case '{', '[', '(':
			end, err := skipGroup(s, i)
			if err != nil {
				return nil
			}
			i = end
			continue
		case ',':
			args = append(args, strings.TrimSpace(s[start:i]))
			start = i + 1
		}
		i++
	}
	return append(args, strings.TrimSpace(s[start:]))
}

// exported reports whether a scrape's families hold series of the metric name a query
// selects: a family of that name that is neither a histogram nor a summary, or the _bucket,
// _sum or _count series of a histogram family (_sum or _count of a summary).
func exported(families map[string]*dto.MetricFamily, name string) bool {
	if mf, ok := families[name]; ok {
		t := mf.GetType()
		return t != dto.MetricType_HISTOGRAM && t != dto.MetricType_SUMMARY
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		mf, ok := families[base]
		if !ok {
			return false
		}
		switch mf.GetType() {
		case dto.MetricType_HISTOGRAM:
			return true
		case dto.MetricType_SUMMARY:
			return suffix != "_bucket"
		}
		return false
	}
	return false
}

func TestPromQLMetricNames(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`prpc_calls_pending{job=~"$job", instance=~"$instance"}`, []string{"prpc_calls_pending"}},
		{`histogram_quantile(0.99, sum by (le, rpc_method) (rate(prpc_call_duration_seconds_bucket{rpc_method=~"$method"}[$__rate_interval])))`,
			[]string{"prpc_call_duration_seconds_bucket"}},
		{`sum(rate(a_sum[5m])) by (le) / sum(rate(a_count[5m])) without (instance)`, []string{"a_sum", "a_count"}},
		{`(sum(rate(x_total{code!="0"}[1m])) or vector(0)) / sum(rate(x_total[1m]))`, []string{"x_total"}},
		{`max(prpc_calls_pending{a="}"} / prpc_calls_max_outstanding)`, []string{"prpc_calls_pending", "prpc_calls_max_outstanding"}},
		{`a / on (instance) group_left (version) b offset 5m > bool 1e-05`, []string{"a", "b"}},
		{`count(topk(3, c)) and d unless e`, []string{"c", "d", "e"}},
		{`rate(f[${__range}]) * ${factor}`, []string{"f"}},
		{`label_values(prpc_calls_pending{job=~"$job"}, instance)`, []string{"prpc_calls_pending"}},
		{`label_values(instance)`, nil},
		{`sum(rate(g:recorded:rate5m[5m]))`, []string{"g:recorded:rate5m"}},
	} {
		got, err := promqlMetricNames(tt.expr)
		require.NoError(t, err, tt.expr)
		assert.Equal(t, tt.want, got, tt.expr)
	}
	for _, bad := range []string{`a{b="c`, `rate(a[5m]`, `rate(a[5m]))`, `a{b="c"`, `a[5m`} {
		_, err := promqlMetricNames(bad)
		assert.Error(t, err, bad)
	}
}

func TestExported(t *testing.T) {
	families := map[string]*dto.MetricFamily{
		"h_seconds": {Type: dto.MetricType_HISTOGRAM.Enum()},
		"s_seconds": {Type: dto.MetricType_SUMMARY.Enum()},
		"c_total":   {Type: dto.MetricType_COUNTER.Enum()},
		"g":         {Type: dto.MetricType_GAUGE.Enum()},
	}
	for name, want := range map[string]bool{
		"h_seconds_bucket": true, "h_seconds_sum": true, "h_seconds_count": true,
		"h_seconds":     false, // a classic histogram has no series of its own name
		"s_seconds_sum": true, "s_seconds_count": true, "s_seconds_bucket": false, "s_seconds": false,
		"c_total": true, "c_total_count": false, "g": true, "g_bucket": false,
		"h_bucket": false, "c": false, "missing_total": false,
	} {
		assert.Equal(t, want, exported(families, name), name)
	}
}

// loadDashboard reads and parses the dashboard.
func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	require.NoError(t, err)
	var d dashboard
	require.NoError(t, json.Unmarshal(b, &d))
	return d
}

// The Grafana dashboard's queries name only metrics that exist: every metric name in every
// panel's PromQL, and in the template variables' queries, has series in a scrape of the game's
// /metrics, so that a renamed metric fails here rather than leave a panel empty. Every panel
// queries the data source of the DS_PROMETHEUS variable.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	d := loadDashboard(t)

	queries := map[string][]string{} // metric name → where the dashboard uses it
	use := func(where, expr string) {
		t.Helper()
		names, err := promqlMetricNames(expr)
		require.NoError(t, err, where)
		require.NotEmpty(t, names, "%s: no metric in %q", where, expr)
		for _, n := range names {
			queries[n] = append(queries[n], where)
		}
	}
	var dsVar bool
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			dsVar = dsVar || "${"+v.Name+"}" == dashboardDS
		case "query":
			q, err := v.query()
			require.NoError(t, err, "variable %s", v.Name)
			require.NotNil(t, v.Datasource, "variable %s", v.Name)
			assert.Equal(t, dashboardDS, v.Datasource.UID, "variable %s", v.Name)
			use("variable "+v.Name, q)
		}
	}
	assert.True(t, dsVar, "a datasource variable named by %s", dashboardDS)

	ids := map[int]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if prev, ok := ids[p.ID]; ok {
				t.Errorf("panels %q and %q have the same id %d", prev, p.Title, p.ID)
			}
			ids[p.ID] = p.Title
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			require.NotNil(t, p.Datasource, "panel %q", p.Title)
			assert.Equal(t, dashboardDS, p.Datasource.UID, "panel %q", p.Title)
			require.NotEmpty(t, p.Targets, "panel %q", p.Title)
			for i, tg := range p.Targets {
				if tg.Datasource != nil {
					assert.Equal(t, dashboardDS, tg.Datasource.UID, "panel %q, query %d", p.Title, i)
				}
				use(fmt.Sprintf("panel %q, query %d", p.Title, i), tg.Expr)
			}
		}
	}
	walk(d.Panels)
	// The operator's first panels: calls by outcome, latency by phase, outstanding calls
	// against MaxOutstanding, in flight against its limit, overloads, tick wait, the loop.
	for _, name := range []string{"prpc_call_completed_total", "prpc_call_overloaded_total",
		"prpc_call_timed_out_total", "prpc_call_shed_total",
		"prpc_call_duration_seconds_bucket", "prpc_call_queue_wait_seconds_bucket",
		"prpc_call_transport_seconds_bucket", "prpc_call_tick_wait_seconds_bucket",
		"prpc_calls_pending", "prpc_calls_max_outstanding", "prpc_calls_in_flight", "prpc_calls_in_flight_limit",
		"prpc_loop_tick_duration_seconds_bucket", "prpc_loop_overruns_total"} {
		assert.Contains(t, queries, name, "the dashboard graphs %s", name)
	}

	// Some series exist only once a call has failed (prpc_backend_failed_total, by code): the
	// game plays against a backend that fails its first call, a join, which the player tries
	// again; the run then fails, for that call.
	var failed atomic.Bool
	addr := startBackend(t, func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if failed.CompareAndSwap(false, true) {
			return nil, status.Error(codes.Internal, "the test fails the first call")
		}
		return h(ctx, req)
	})
	g := scrapeDuringRun(t, addr)
	require.Equal(t, 1, g.res.code, "the run fails for the call the backend failed")
	require.Contains(t, g.res.stderr, "gameloop: FAILED: 1 calls failed (Internal 1)")
	for name, where := range queries {
		assert.True(t, exported(g.families, name), "%s, queried by %s, is not in the game's /metrics", name, strings.Join(where, "; "))
	}
}
