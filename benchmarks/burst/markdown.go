package main

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
)

// WriteMarkdown writes the report as Markdown: the command, the machine, the summary of the
// ratios, then the burst suites' notes and tables and the loop suite's.
func (r *Report) WriteMarkdown(w io.Writer) error { return Run{r}.WriteMarkdown(w) }

// Run is the reports of one run of the suite, one per placement (-placements), in the order
// they ran.
type Run []*Report

// WriteMarkdown writes the run's reports as Markdown: the command, then each report, under a
// heading naming its placement when there are several.
func (run Run) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	run.writeBody(&b)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeBody writes what WriteMarkdown writes.
func (run Run) writeBody(b *strings.Builder) {
	fmt.Fprintf(b, "Command: `%s`\n", run[0].Command)
	if len(run) == 1 {
		run[0].writeBody(b)
		return
	}
	for _, r := range run {
		title, _ := r.placement()
		fmt.Fprintf(b, "\n## %s\n", title)
		var body strings.Builder
		r.writeBody(&body)
		b.WriteString(demoteHeadings(body.String()))
	}
}

// Errors returns the calls that failed or were answered wrongly over all the run's reports.
func (run Run) Errors() int {
	n := 0
	for _, r := range run {
		n += r.Errors()
	}
	return n
}

// demoteHeadings makes every Markdown heading in md one level deeper.
func demoteHeadings(md string) string {
	var b strings.Builder
	for line := range strings.Lines(md) {
		if strings.HasPrefix(line, "#") {
			b.WriteString("#")
		}
		b.WriteString(line)
	}
	return b.String()
}

// writeBody writes one report's part of WriteMarkdown: all but the command.
func (r *Report) writeBody(b *strings.Builder) {
	r.writeMachineMarkdown(b)
	r.writeSummaryMarkdown(b)
	if len(r.Suites) > 0 {
		b.WriteString("\n## Burst suites\n\n")
		r.writeSuitesMarkdown(b)
	}
	if r.Loop != nil {
		b.WriteString("\n## Loop suite\n\n")
		r.writeLoopMarkdown(b)
	}
}

// writeMachineMarkdown writes the machine, the run's date and load, and where the backend ran.
func (r *Report) writeMachineMarkdown(b *strings.Builder) {
	m := r.Machine
	b.WriteString("\n## Machine\n\n")
	fmt.Fprintf(b, "- CPU: %s, %d cores (GOMAXPROCS %d)\n", m.CPUModel, m.CPUs, m.GOMAXPROCS)
	osLine := m.GOOS + "/" + m.GOARCH
	if m.Kernel != "" {
		osLine = "kernel " + m.Kernel + ", " + osLine
	}
	if m.OSName != "" {
		osLine = m.OSName + ", " + osLine
	}
	fmt.Fprintf(b, "- OS: %s\n", osLine)
	fmt.Fprintf(b, "- Go: %s; grpc-go: %s\n", m.GoVersion, m.GRPCVersion)
	if !r.Started.IsZero() {
		fmt.Fprintf(b, "- Run: started %s, took %v\n", r.Started.UTC().Format("2006-01-02 15:04 MST"), r.Elapsed.Round(time.Second))
	}
	if m.LoadStart != "" {
		fmt.Fprintf(b, "- Load average (1, 5, 15 min): %s at the start, %s at the end. It counts this run's own processes too; any other work on the machine skews every figure.\n",
			m.LoadStart, m.LoadEnd)
	}
	switch {
	case r.InProcess:
		b.WriteString("- Backend: in the client's process (`-inprocess`), so client CPU/call **includes the backend's**, as do faults/call.\n")
	case r.Pinned:
		fmt.Fprintf(b, "- Backend: a separate process. Pinned: client threads on CPU %s, backend threads on CPU %s.\n",
			r.ClientAffinity, r.BackendAffinity)
	default:
		b.WriteString("- Backend: a separate process; not pinned, so client and backend share the machine's CPUs.\n")
	}
}

// writeSummaryMarkdown writes the ratios of prpc to the baseline of every shape, each with its
// spread over the trials, and the loop suite's comparison and targets.
func (r *Report) writeSummaryMarkdown(b *strings.Builder) {
	b.WriteString("\n## Summary\n\n")
	if len(r.Suites) > 0 {
		b.WriteString("Burst suites, each prpc form ÷ the grpc-go pool: the median over the trials of each trial's ratio, with the least and the greatest in brackets. " +
			"calls/s: above 1 favours prpc; client CPU/call, p50 and p99 latency: below 1 favour prpc. " + r.burstFormText() + "\n\n")
		b.WriteString("| suite | backend | calls | W×B | prpc form | trials | calls/s | client CPU/call | p50 | p99 |\n")
		b.WriteString("|:--|:--|---:|:-:|:--|---:|---:|---:|---:|---:|\n")
		for _, s := range r.Suites {
			for _, sh := range s.Shapes {
				forms := sh.prpcClients()
				if len(forms) == 0 {
					forms = []string{""} // the shape's row, without ratios
				}
				for _, f := range forms {
					rs := sh.trialRatios(f)
					cell := func(f func(ratios) float64) string { return ratioCell(spreadOf(rs, f), len(rs)) }
					fmt.Fprintf(b, "| %s | %s | %s | %d×%d | %s | %d | %s | %s | %s | %s |\n",
						s.Name, backendText(s.Backend), thousands(sh.Shape.Calls), sh.Shape.Workers, sh.Shape.Batch, cmp.Or(f, "–"), sh.Shape.Trials,
						cell(func(r ratios) float64 { return r.Throughput }), cell(func(r ratios) float64 { return r.CPUPerCall }),
						cell(func(r ratios) float64 { return r.P50 }), cell(func(r ratios) float64 { return r.P99 }))
				}
			}
		}
	}
	if r.Loop != nil && len(r.Loop.Sizes) > 0 {
		if len(r.Suites) > 0 {
			b.WriteString("\n")
		}
		r.writeLoopSummaryMarkdown(b)
	}
}

// ratioCell formats the spread of a ratio over n trials: "0.97× (0.90–1.02)", or "0.97×" for
// one trial, or "–" for none or an unknown ratio.
func ratioCell(s spread, n int) string {
	if n == 0 || times(s.median) == "–" {
		return "–"
	}
	return spreadText(s, n, "×")
}

// spreadText formats the spread s of n values in unit: the median, then the least and the
// greatest in brackets when there are several, as in "55.09 ms (50.63–59.56)".
func spreadText(s spread, n int, unit string) string {
	if n < 2 {
		return fmt.Sprintf("%.2f%s", s.median, unit)
	}
	return fmt.Sprintf("%.2f%s (%.2f–%.2f)", s.median, unit, s.min, s.max)
}

// writeSuitesMarkdown writes the burst suites' notes and tables.
func (r *Report) writeSuitesMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "Every call: GetPlayer of a player the backend holds, timeout %v, response checked. Warm-up: %d calls per client per shape. prpc drains with Tick(%v) woken by Ready.\n",
		r.Timeout, r.Warmup, r.Budget)
	b.WriteString("Latency: submit → outcome on the loop goroutine, percentiles by nearest rank. " +
		"CPU/call: user+system CPU time of the process over the trial ÷ calls (getrusage). " +
		"allocs/call: heap allocations of the process over the trial ÷ calls. " +
		"faults/call: minor page faults of the client process over the trial ÷ calls (getrusage ru_minflt): each is a first touch of a fresh page; " +
		"the trial starts after freed memory is returned to the OS, so they include pages the heap had held before. " +
		peakRSSNote(r) +
		"Ratios: each prpc client ÷ grpc-go in the same trial (calls/s: above 1 is better for prpc; CPU/call and p99: below 1 is better). " +
		r.burstFormText() + "\n")
	if r.Metadata {
		b.WriteString("Every client captures every response's header and trailer: prpc with MethodPolicy.ResponseMetadata, the grpc-go pool with grpc.Header and grpc.Trailer (-metadata).\n")
	}
	for _, s := range r.Suites {
		backendCol := !r.InProcess && hasBackendCPU(s)
		fmt.Fprintf(b, "\n### %s\n\n%s\n\n", s.Name, backendNote(s.Backend))
		b.WriteString("| calls | W×B | trial | client | total | calls/s | avg | p50 | p95 | p99 | CPU/call |")
		sep := "|---:|:-:|:-:|:--|---:|---:|---:|---:|---:|---:|---:|"
		if backendCol {
			b.WriteString(" backend CPU/call |")
			sep += "---:|"
		}
		b.WriteString(" allocs/call | faults/call | peak RSS | errors | calls/s ratio | CPU/call ratio | p99 ratio |\n")
		sep += "---:|---:|---:|---:|---:|---:|---:|\n"
		b.WriteString(sep)
		for _, sh := range s.Shapes {
			row := func(trial string, t TrialResult, rs *ratios) {
				fmt.Fprintf(b, "| %s | %d×%d | %s | %s | %.3f s | %s | %.2f ms | %.2f ms | %.2f ms | %.2f ms | %.1f µs |",
					thousands(sh.Shape.Calls), sh.Shape.Workers, sh.Shape.Batch, trial, t.Client,
					t.Total.Seconds(), thousands(int(t.Throughput()+0.5)),
					ms(t.Lat.Avg), ms(t.Lat.P50), ms(t.Lat.P95), ms(t.Lat.P99), us(t.CPUPerCall()))
				if backendCol {
					if d := t.BackendCPUPerCall(); d >= 0 {
						fmt.Fprintf(b, " %.1f µs |", us(d))
					} else {
						b.WriteString(" – |")
					}
				}
				fmt.Fprintf(b, " %.1f | %.1f | %s | %d |", t.AllocsPerCall(), t.FaultsPerCall(), mib(t.PeakRSS), t.Errors())
				if rs != nil {
					fmt.Fprintf(b, " %s | %s | %s |\n", times(rs.Throughput), times(rs.CPUPerCall), times(rs.P99))
				} else {
					b.WriteString(" | | |\n")
				}
			}
			for t := 1; t <= sh.Shape.Trials; t++ {
				for _, tr := range sh.Trials {
					if tr.Trial != t {
						continue
					}
					var rs *ratios
					if p, base, both := sh.pair(tr.Client, t); both && isPRPC(tr.Client) {
						x := ratioOf(p, base)
						rs = &x
					}
					row(strconv.Itoa(t), tr, rs)
				}
			}
			if sh.Shape.Trials > 1 {
				for _, name := range append(sh.prpcClients(), clientBaseline) {
					mt, ok := sh.medianTrial(name)
					if !ok {
						continue
					}
					var rs *ratios
					if trs := sh.trialRatios(name); isPRPC(name) && len(trs) > 0 {
						x := medianRatios(trs)
						rs = &x
					}
					row("**median**", mt, rs)
				}
			}
		}
	}
	b.WriteString("\nMedian rows: the median of each figure over the trials; their ratios are the medians of the per-trial ratios. Errors: failed calls plus wrong responses, summed.\n")
}

// burstFormText says how each of the burst suites' prpc clients submits its calls, and which
// is the form earlier reports measured.
func (r *Report) burstFormText() string {
	var forms []string
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			for _, f := range sh.prpcClients() {
				if !slices.Contains(forms, f) {
					forms = append(forms, f)
				}
			}
		}
	}
	var parts []string
	for _, f := range forms {
		part := fmt.Sprintf("client %s, every call submitted by %s", f, formText(f))
		if f == clientThen {
			part += ", the form earlier reports measured, so that these figures compare with theirs"
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return ""
	}
	return "prpc: " + strings.Join(parts, "; ") + " (-clients chooses the forms)."
}

// backendNote says, under a burst suite's heading, which backend the suite ran against.
func backendNote(kind string) string {
	if kind == backendFast {
		return "Backend: " + backendText(kind) + ". GetPlayer answers from a table of responses built before serving: " +
			"a map lookup, nothing else, so that the backend's part of each call is gRPC's serving alone."
	}
	return "Backend: " + backendText(kind) + ": the data-service example (examples/dataservice/server), " +
		"seeded with every player before the first burst."
}

// peakRSSNote says what the peak RSS column means in r.
func peakRSSNote(r *Report) string {
	for _, s := range r.Suites {
		for _, sh := range s.Shapes {
			for _, t := range sh.Trials {
				if !t.PeakReset {
					return "Peak RSS: the process's peak resident set since it started (ru_maxrss; this OS did not let it be reset per trial). "
				}
			}
		}
	}
	return "Peak RSS: the process's peak resident set during the trial (ru_maxrss, reset before each trial after returning freed memory to the OS). "
}

func hasBackendCPU(s SuiteResult) bool {
	for _, sh := range s.Shapes {
		for _, t := range sh.Trials {
			if t.BackendCPU >= 0 {
				return true
			}
		}
	}
	return false
}
