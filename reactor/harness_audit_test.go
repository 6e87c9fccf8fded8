package reactor_test

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"

	"github.com/trixnew/prpc/internal/threadcpu"
	"github.com/trixnew/prpc/reactor"
)

// tickOverrun is the most an audited Tick may run past its budget. Tick checks the clock after
// each delivery, so with trivial callbacks (a few field writes and one time.Now, well under a
// microsecond even under -race) its overrun is one delivery plus one clock read; a millisecond
// is about a thousand times that, and is exceeded only when the CPU is taken from the ticking
// thread in the middle of a Tick (see tickAudit.tick for how that is told apart). With a
// manual clock Elapsed counts only what the callbacks advance.
const tickOverrun = time.Millisecond

// tickAudit measures the Ticks of a host made by startHost, and keeps those that overran
// their budget by more than tickOverrun: excused when the thread lost the CPU in the middle,
// failures otherwise.
type tickAudit struct {
	ticks    int           // Ticks that delivered something
	worst    time.Duration // largest Elapsed
	overruns []string      // Ticks over budget + tickOverrun, not excused
	excused  []string      // Ticks over it only by stalls of the thread
	gcPauses [1]metrics.Sample
}

func newTickAudit() *tickAudit {
	a := &tickAudit{}
	a.gcPauses[0].Name = "/sched/pauses/total/gc:seconds"
	return a
}

// switches counts the context switches of one OS thread.
type switches struct{ voluntary, involuntary int64 }

// gcPauseCount reads the number of stop-the-world pauses the runtime has made for GC.
func gcPauseCount(s []metrics.Sample) uint64 {
	metrics.Read(s)
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n
}

// tick calls Tick with budget on h's reactor and judges its report.
//
// On a loaded machine, and more so under -race, the thread running a Tick can stop for
// milliseconds in the middle of it: the kernel gives its time slice to another thread, the
// runtime stops the world for GC or parks the goroutine, an interrupt or the hypervisor takes
// the CPU. No library can keep a wall-clock budget through that. It shows as one or two long
// gaps between consecutive deliveries, which otherwise follow each other within microseconds,
// after the last one, or, rarely, before the first.
//
// So tick runs the Tick locked to its OS thread, reads the thread's context switches (exact,
// from getrusage(RUSAGE_THREAD); Linux only), its CPU time (package threadcpu) and the
// runtime's GC pauses around it, and takes the deliveries' timestamps from the host's
// callbacks. A stall is a stretch of more than tickOverrun between two deliveries or after the
// last: there prpc does O(1) work per call (take the next call, run its callbacks and, once,
// take the counters' lock that only Call, Stats and Tick share, all on the host goroutine in
// these tests), so a stall there is the CPU being taken away. The time before the first
// delivery, where a cost that grows with the backlog would show, counts as a stall only if the
// thread was switched out involuntarily, or the world stopped for GC, or the thread blocked (a
// voluntary switch) while the whole Tick used no more CPU time than budget + tickOverrun: a
// cost that grows with the backlog burns CPU. (Tick takes no lock that prpc's own goroutines
// hold for long: it never waits for the delivery queue, and in these tests the counters' lock
// is taken only on the host goroutine. A block before the first delivery is the Go runtime
// parking the goroutine.) An overrun of more than tickOverrun is excused, and logged with its
// measurements by report, only if the Tick is within budget + tickOverrun without its stalls.
// Any other overrun fails the test: a Tick that was slow throughout, or slow to start.
func (a *tickAudit) tick(h *host, budget time.Duration) reactor.TickReport {
	pauses := a.gcPauses[:]
	pausesBefore := gcPauseCount(pauses)
	runtime.LockOSThread()
	before, okBefore := threadSwitches()
	cpuBefore, cpuOKBefore := threadcpu.Now()
	began := time.Now()
	rep := h.r.Tick(budget)
	ended := time.Now()
	cpuAfter, cpuOKAfter := threadcpu.Now()
	after, okAfter := threadSwitches()
	runtime.UnlockOSThread()
	if rep.Delivered > 0 {
		a.ticks++
	}
	a.worst = max(a.worst, rep.Elapsed)
	limit := max(budget, 0) + tickOverrun
	if rep.Elapsed <= limit {
		return rep
	}
	preempted, blocked := after.involuntary-before.involuntary, after.voluntary-before.voluntary
	gc := gcPauseCount(pauses) - pausesBefore
	// Split the Tick at its deliveries: the lead before the first, then a gap after each.
	stamps := h.stamps
	lead, stalled, longest := ended.Sub(began), time.Duration(0), time.Duration(0)
	if n := len(stamps); n > 0 {
		lead = stamps[0].Sub(began)
		for i := range n {
			next := ended
			if i+1 < n {
				next = stamps[i+1]
			}
			if gap := next.Sub(stamps[i]); gap > tickOverrun {
				stalled += gap
				longest = max(longest, gap)
			}
		}
	}
	cpu, cpuKnown := cpuAfter-cpuBefore, cpuOKBefore && cpuOKAfter
	idle := blocked > 0 && cpuKnown && cpu <= limit // blocked, and not working long
	if lead > tickOverrun && okBefore && okAfter && (preempted > 0 || gc > 0 || idle) {
		stalled += lead
	}
	why := fmt.Sprintf("budget %v, wall %v, %d delivered, first after %v, stalled %v (longest %v): %d involuntary and %d voluntary context switches, %d GC pauses, thread CPU %v",
		budget, rep.Elapsed, rep.Delivered, lead, stalled, longest, preempted, blocked, gc, cpu)
	if !cpuKnown {
		why += " (not measured)"
	}
	if !okBefore || !okAfter {
		why += " (context switches not measured)"
	}
	if stalled > 0 && rep.Elapsed-stalled <= limit {
		a.excused = append(a.excused, why)
	} else {
		a.overruns = append(a.overruns, why)
	}
	return rep
}

// report fails the test for every Tick that overran without excuse, and logs the excused
// ones and a summary.
func (a *tickAudit) report(t *testing.T) {
	t.Helper()
	if len(a.overruns) > 0 {
		t.Errorf("%d of %d Ticks overran their budget by more than %v: %v", len(a.overruns), a.ticks, tickOverrun, a.overruns)
	}
	for _, e := range a.excused {
		t.Logf("excused Tick overrun (the CPU was taken from the Tick, see tickAudit.tick): %s", e)
	}
	t.Logf("Tick audit: %d delivering Ticks, worst Elapsed %v (budget %v + %v); %d overruns excused",
		a.ticks, a.worst, tickBudget, tickOverrun, len(a.excused))
}

// testLog is a slog.Handler that fails the test on Error records and logs the others.
type testLog struct{ t *testing.T }

func (testLog) Enabled(context.Context, slog.Level) bool { return true }

func (l testLog) Handle(_ context.Context, rec slog.Record) error {
	var b strings.Builder
	b.WriteString(rec.Message)
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key != "stack" {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		return true
	})
	if rec.Level >= slog.LevelError {
		l.t.Errorf("prpc logged an error: %s", b.String())
	} else {
		l.t.Logf("prpc log (%v): %s", rec.Level, b.String())
	}
	return nil
}

func (l testLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l testLog) WithGroup(string) slog.Handler      { return l }
