package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteMarkdown writes the report as Markdown: a short header, then one table per suite, then
// the loop suite's table.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "Command: `%s`\n\n", r.Command)
	fmt.Fprintf(&b, "Machine: %d CPUs (%s), %s/%s, %s, grpc-go %s, GOMAXPROCS %d.\n",
		m.CPUs, m.CPUModel, m.GOOS, m.GOARCH, m.GoVersion, m.GRPCVersion, m.GOMAXPROCS)
	if m.LoadStart != "" {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min): %s at the start, %s at the end.\n", m.LoadStart, m.LoadEnd)
	}
	switch {
	case r.InProcess:
		b.WriteString("Backend: in the client's process (`-inprocess`), so client CPU/call **includes the backend's**, as do faults/call.\n")
	case r.Pinned:
		fmt.Fprintf(&b, "Backend: a separate process. Pinned: client threads on CPU %s, backend threads on CPU %s.\n",
			r.ClientAffinity, r.BackendAffinity)
	default:
		b.WriteString("Backend: a separate process; not pinned, so client and backend share both CPUs.\n")
	}
	if len(r.Suites) > 0 {
		r.writeSuitesMarkdown(&b)
	}
	if r.Loop != nil {
		r.writeLoopMarkdown(&b)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSuitesMarkdown writes the burst suites' notes and tables.
func (r *Report) writeSuitesMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "Every call: GetPlayer of a seeded player, timeout %v, response checked. Warm-up: %d calls per client per shape. prpc drains with Tick(%v) woken by Ready.\n",
		r.Timeout, r.Warmup, r.Budget)
	b.WriteString("Latency: submit → outcome on the loop goroutine, percentiles by nearest rank. " +
		"CPU/call: user+system CPU time of the process over the trial ÷ calls (getrusage). " +
		"allocs/call: heap allocations of the process over the trial ÷ calls. " +
		"faults/call: minor page faults of the client process over the trial ÷ calls (getrusage ru_minflt): each is a first touch of a fresh page; " +
		"the trial starts after freed memory is returned to the OS, so they include pages the heap had held before. " +
		peakRSSNote(r) +
		"Ratios: prpc ÷ grpc-go in the same trial (calls/s: above 1 is better for prpc; CPU/call and p99: below 1 is better).\n")
	if r.PRPCNoMetadata {
		b.WriteString("prpc's GetPlayer policy turns response metadata off (MethodPolicy.NoResponseMetadata, -prpc-no-metadata): neither client captures each response's header and trailer.\n")
	}
	if r.BaselineMetadata {
		b.WriteString("The grpc-go baseline captures every response's header and trailer (grpc.Header, grpc.Trailer), as prpc does for Promise.Header and Promise.Trailer (-baseline-metadata).\n")
	}
	for _, s := range r.Suites {
		backendCol := !r.InProcess && hasBackendCPU(s)
		fmt.Fprintf(b, "\n#### %s\n\n", s.Name)
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
				p, base, both := sh.pair(t)
				for _, tr := range sh.Trials {
					if tr.Trial != t {
						continue
					}
					var rs *ratios
					if both && tr.Client == clientPRPC {
						x := ratioOf(p, base)
						rs = &x
					}
					row(strconv.Itoa(t), tr, rs)
				}
			}
			if sh.Shape.Trials > 1 {
				trs := sh.trialRatios()
				for _, name := range []string{clientPRPC, clientBaseline} {
					mt, ok := sh.medianTrial(name)
					if !ok {
						continue
					}
					var rs *ratios
					if name == clientPRPC && len(trs) > 0 {
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
