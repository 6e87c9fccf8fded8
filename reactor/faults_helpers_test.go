package reactor_test

// Shared helpers of the faults_*_test.go files (issue 5, "Faults" 1–8 and "Bad input" 12).
// Every identifier here starts with "fault" so that it cannot collide with helpers of other
// test files of the package.

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/threadcpu"
	"github.com/trixnew/prpc/reactor"
)

const (
	// faultBudget is the budget of every Tick the fault tests call. It is generous on
	// purpose: the assertion is about the overrun, not about the budget.
	faultBudget = 2 * time.Millisecond

	// faultOverrun is the most a Tick may run past its budget. Tick checks the clock after
	// each delivery, so with trivial callbacks (a few field writes and one time.Now, well under
	// a microsecond even under -race) its overrun is one delivery plus one clock read; 1 ms
	// is about a thousand times that, and is exceeded only when the CPU is taken from the
	// ticking thread in the middle of a Tick (see faultHost.tick for how that is told apart).
	// With a manual clock Elapsed counts only what the callbacks advance, so it is 0 here.
	faultOverrun = time.Millisecond

	// faultLate bounds how late after its deadline a call may settle, delivery included, in
	// tests on the real clock. The reactor's timer fires at the deadline and the settlement
	// reaches the host with one channel wake-up: microseconds, and 1–7 ms in most of our
	// -race runs. But with the two cores shared with other processes (load average 6–12
	// while we measured), the process itself is sometimes off the CPU when the deadline
	// passes, and we saw settlements 20, 31 and 86 ms late, with the reactor's own reading
	// ("deadline exceeded after 120ms (timeout 100ms)") showing that its timer goroutine ran
	// late. The issue's ±30 ms can therefore not hold on the real clock on such a machine; it
	// is proven exactly, instead, by TestFaultDeadlinesManualClock (not settled 1 ms before the
	// deadline, settled at it), and the real-clock tests assert this bound, about 6× the worst
	// lateness we measured, which still fails on any deadline that waits for something else.
	faultLate = 500 * time.Millisecond
)

// faultCall is one call submitted through a faultHost, with what its callbacks saw.
type faultCall struct {
	seq       int
	msg       string
	submitted time.Time     // real time just before Call
	timeout   time.Duration // Options.Timeout as submitted
	p         *calls.Promise[*testpb.EchoResponse]
	rejected  bool // Failed already when Call returned

	// Written by the callbacks, on the host goroutine.
	thens, errs, always int
	resp                *testpb.EchoResponse
	err                 error
	settled             time.Time // real time its callbacks had run: an upper bound of settlement
	order               int       // 1-based position in delivery order; 0 while undelivered
}

// done reports whether the call's callbacks have run.
func (c *faultCall) done() bool { return c.always > 0 }

// latency is the time from submission to delivery, an upper bound of the time to settlement.
func (c *faultCall) latency() time.Duration { return c.settled.Sub(c.submitted) }

// code is the gRPC code of the outcome: OK on success.
func (c *faultCall) code() codes.Code { return status.Code(c.err) }

func (c *faultCall) String() string {
	return fmt.Sprintf("call %d (%s): thens %d, errs %d, always %d, err %v", c.seq, c.msg, c.thens, c.errs, c.always, c.err)
}

// faultHost plays the game loop: it owns a reactor, submits audited calls, ticks with
// faultBudget when Ready fires, records every TickReport, and when the test ends closes the
// reactor and audits: every call settled exactly once, and no Tick overran its budget by
// more than faultOverrun.
type faultHost struct {
	t     *testing.T
	r     *reactor.Reactor
	calls []*faultCall
	order int // calls delivered so far

	ticks     int           // Ticks that delivered something
	worstTick time.Duration // largest Elapsed
	overruns  []string      // Ticks over budget + faultOverrun, not excused (see tick)
	excused   []string      // Ticks over it only by stalls of the thread (see tick)
	gcPauses  [1]metrics.Sample
	stamps    []time.Time // when each call delivered by the current Tick finished its callbacks

	closedByTest bool // the test called close; the cleanup then does not judge Close's result
}

// newFaultHost starts a reactor with cfg (Credentials default to Insecure) whose callback
// panics and error logs fail the test, and closes and audits it when the test ends.
func newFaultHost(t *testing.T, cfg reactor.Config) *faultHost {
	t.Helper()
	if cfg.Credentials == nil && cfg.Conn == nil {
		cfg.Credentials = reactor.Insecure()
	}
	cfg.OnCallbackPanic = func(p any) { t.Errorf("a promise callback panicked: %v", p) }
	cfg.Logger = slog.New(faultLog{t})
	r, err := reactor.New(cfg)
	require.NoError(t, err)
	h := &faultHost{t: t, r: r}
	h.gcPauses[0].Name = "/sched/pauses/total/gc:seconds"
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		if err := r.Close(ctx); err != nil && !h.closedByTest {
			t.Errorf("closing the reactor: %v", err)
		}
		h.audit()
	})
	return h
}

// submit submits req with opts and registers the audit callbacks.
func (h *faultHost) submit(req *testpb.EchoRequest, opts *calls.Options) *faultCall {
	c := h.submitBare(req, opts)
	h.attach(c)
	return c
}

// submitBare submits req with opts without registering callbacks; attach them later.
func (h *faultHost) submitBare(req *testpb.EchoRequest, opts *calls.Options) *faultCall {
	c := &faultCall{seq: len(h.calls), msg: req.GetMessage(), submitted: time.Now()}
	if opts != nil {
		c.timeout = opts.Timeout
	}
	c.p = reactor.Call(h.r, echo, req, opts)
	c.rejected = c.p.State() == calls.Failed
	h.calls = append(h.calls, c)
	return c
}

// attach registers c's audit callbacks: Then, OnError, Always, in that order.
func (h *faultHost) attach(c *faultCall) {
	c.p.Then(func(resp *testpb.EchoResponse) {
		c.thens++
		c.resp = resp
	}).OnError(func(err error) {
		c.errs++
		c.err = err
	}).Always(func() {
		c.always++
		if c.always == 1 {
			c.settled = time.Now()
			h.order++
			c.order = h.order
			h.stamps = append(h.stamps, c.settled)
		}
	})
}

// close closes the reactor, as the host's shutdown would.
func (h *faultHost) close(ctx context.Context) error {
	h.closedByTest = true
	return h.r.Close(ctx)
}

// faultSwitches counts the context switches of one OS thread.
type faultSwitches struct{ voluntary, involuntary int64 }

// faultGCPauses reads the number of stop-the-world pauses the runtime has made for GC.
func faultGCPauses(s []metrics.Sample) uint64 {
	metrics.Read(s)
	var n uint64
	for _, c := range s[0].Value.Float64Histogram().Counts {
		n += c
	}
	return n
}

// tick calls Tick with faultBudget and records its report.
//
// Under -race on two cores shared with other processes, the thread running a Tick sometimes
// stops for milliseconds in the middle of it. We measured 3–90 ms overruns at load averages
// of 6–12, and timestamped every delivery to see where the time went: in each, the Tick
// delivered at its usual pace (a few µs per call) except for one or two stalls of 1–90 ms
// between two consecutive deliveries, after the last one, or, rarely, before the first.
// Around them the thread showed an involuntary context switch (the kernel gave its time slice
// to another thread, of this process or another), a GC stop-the-world pause, a voluntary
// switch (the Go scheduler parked the goroutine, e.g. to scan its stack for GC, or the race
// runtime blocked it), or nothing at all (interrupt handling: the softirqs of the loopback
// traffic run in whatever thread they interrupt; or the hypervisor stopping the virtual CPU).
// No library can keep a wall-clock budget through that.
//
// So tick runs the Tick locked to its OS thread, reads the thread's context switches (exact,
// from getrusage(RUSAGE_THREAD); Linux only), its CPU time (package threadcpu) and the
// runtime's GC pauses around it, and takes the deliveries' timestamps from the audit
// callbacks. A stall is a stretch of more than
// faultOverrun (a thousand times a delivery's cost) between two deliveries or after the
// last: there prpc does O(1) work per call (take the next call, its callbacks and, once, the
// counters lock that only Call, Stats and Tick share, all on the host goroutine here), so a
// stall there is the CPU being taken away. The time before the first delivery, where a cost
// that grows with the backlog would show (as it did before the fix in tick.go), counts as a
// stall only if the thread was switched out involuntarily, or the world stopped for GC, or
// the thread blocked (a voluntary switch) while the whole Tick used no more CPU time than
// budget + faultOverrun: a cost that grows with the backlog burns CPU. (Tick takes no lock
// that prpc's own goroutines hold for long here: it never waits for the delivery queue, and
// the counters' lock is only taken on the host goroutine in these tests. The blocks seen,
// under -race with thousands of goroutines, are the Go runtime parking the goroutine; one
// stalled a Tick for 36 ms before its first delivery.) An overrun of more than faultOverrun is excused, and logged with its measurements by audit,
// only if the Tick is within budget + faultOverrun without its stalls. Any other overrun
// fails the test: a Tick that was slow throughout, or slow to start.
func (h *faultHost) tick() reactor.TickReport { return h.tickWith(faultBudget) }

// tickWith is tick with the given budget.
func (h *faultHost) tickWith(budget time.Duration) reactor.TickReport {
	pauses := h.gcPauses[:]
	pausesBefore := faultGCPauses(pauses)
	h.stamps = h.stamps[:0]
	runtime.LockOSThread()
	before, okBefore := faultThreadSwitches()
	cpuBefore, cpuOKBefore := threadcpu.Now()
	began := time.Now()
	rep := h.r.Tick(budget)
	ended := time.Now()
	cpuAfter, cpuOKAfter := threadcpu.Now()
	after, okAfter := faultThreadSwitches()
	runtime.UnlockOSThread()
	if rep.Delivered > 0 {
		h.ticks++
	}
	h.worstTick = max(h.worstTick, rep.Elapsed)
	limit := max(budget, 0) + faultOverrun
	if rep.Elapsed <= limit {
		return rep
	}
	preempted, blocked := after.involuntary-before.involuntary, after.voluntary-before.voluntary
	gc := faultGCPauses(pauses) - pausesBefore
	// Split the Tick at its deliveries: the lead before the first, then a gap after each.
	lead, stalled, longest := ended.Sub(began), time.Duration(0), time.Duration(0)
	if n := len(h.stamps); n > 0 {
		lead = h.stamps[0].Sub(began)
		for i := range n {
			next := ended
			if i+1 < n {
				next = h.stamps[i+1]
			}
			if gap := next.Sub(h.stamps[i]); gap > faultOverrun {
				stalled += gap
				longest = max(longest, gap)
			}
		}
	}
	cpu, cpuKnown := cpuAfter-cpuBefore, cpuOKBefore && cpuOKAfter
	idle := blocked > 0 && cpuKnown && cpu <= limit // blocked, and not working long
	if lead > faultOverrun && okBefore && okAfter && (preempted > 0 || gc > 0 || idle) {
		stalled += lead
	}
	why := fmt.Sprintf("wall %v, %d delivered, first after %v, stalled %v (longest %v): %d involuntary and %d voluntary context switches, %d GC pauses, thread CPU %v",
		rep.Elapsed, rep.Delivered, lead, stalled, longest, preempted, blocked, gc, cpu)
	if !cpuKnown {
		why += " (not measured)"
	}
	if !okBefore || !okAfter {
		why += " (context switches not measured)"
	}
	if stalled > 0 && rep.Elapsed-stalled <= limit {
		h.excused = append(h.excused, why)
	} else {
		h.overruns = append(h.overruns, why)
	}
	return rep
}

// waitFor ticks, woken by Ready or every poll, until cond holds; it fails the test
// after bound.
func (h *faultHost) waitFor(bound time.Duration, what string, cond func() bool) {
	h.t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	poll := time.NewTicker(poll)
	defer poll.Stop()
	for {
		h.tick()
		if cond() {
			return
		}
		select {
		case <-h.r.Ready():
		case <-poll.C:
		case <-deadline.C:
			h.t.Fatalf("%s: not within %v", what, bound)
		}
	}
}

// settle ticks until every call in cs (every call of h if cs is empty) has been delivered.
func (h *faultHost) settle(bound time.Duration, cs ...*faultCall) {
	h.t.Helper()
	if len(cs) == 0 {
		cs = h.calls
	}
	next := 0
	h.waitFor(bound, fmt.Sprintf("%d calls settled", len(cs)), func() bool {
		for next < len(cs) && cs[next].done() {
			next++
		}
		return next == len(cs)
	})
}

// pause ticks for d, as a host that keeps its loop running.
func (h *faultHost) pause(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		h.tick()
		time.Sleep(poll)
	}
}

// outstanding is the number of calls submitted and not yet delivered.
func (h *faultHost) outstanding() int { return len(h.calls) - h.order }

// audit checks exactly-once settlement of every call and the Tick overruns.
func (h *faultHost) audit() {
	t := h.t
	t.Helper()
	bad := 0
	for _, c := range h.calls {
		ok := c.thens+c.errs == 1 && c.always == 1 && (c.err == nil) == (c.thens == 1)
		if !ok {
			if bad < 10 {
				t.Errorf("not settled exactly once: %v", c)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d calls not settled exactly once", bad, len(h.calls))
	}
	// See tick for what counts as an overrun and what is excused.
	if len(h.overruns) > 0 {
		t.Errorf("%d of %d Ticks overran their %v budget by more than %v: %v", len(h.overruns), h.ticks, faultBudget, faultOverrun, h.overruns)
	}
	for _, e := range h.excused {
		t.Logf("excused Tick overrun (the CPU was taken from the Tick, see faultHost.tick): %s", e)
	}
	t.Logf("audit: %d calls settled exactly once; %d delivering Ticks, worst Elapsed %v (budget %v + %v); %d overruns excused",
		len(h.calls), h.ticks, h.worstTick, faultBudget, faultOverrun, len(h.excused))
}

// faultRequireDeadlines checks that each call in cs, all submitted with an Options.Timeout,
// failed with ErrTimeout (DeadlineExceeded) no earlier than its timeout after submission and
// at most faultLate after it, and logs the worst lateness.
func faultRequireDeadlines(t *testing.T, what string, cs []*faultCall) {
	t.Helper()
	var worst time.Duration
	for _, c := range cs {
		require.ErrorIs(t, c.err, calls.ErrTimeout, "call %d", c.seq)
		require.Equal(t, codes.DeadlineExceeded, c.code())
		// submitted is read before Call, and the deadline is counted from inside Call, so a
		// call settled at its deadline has a latency of at least its timeout.
		d := c.timeout
		require.Positive(t, d, "call %d was submitted without a timeout", c.seq)
		require.GreaterOrEqual(t, c.latency(), d, "call %d settled before its deadline", c.seq)
		worst = max(worst, c.latency()-d)
	}
	t.Logf("%s: %d calls, worst settlement %v after the deadline (bound %v); sample %v", what, len(cs), worst, faultLate, cs[0].err)
	require.LessOrEqual(t, worst, faultLate)
}

// faultTally counts the calls by outcome code and keeps one sample error per code.
func faultTally(cs []*faultCall) (byCode map[codes.Code]int, sample map[codes.Code]error) {
	byCode, sample = map[codes.Code]int{}, map[codes.Code]error{}
	for _, c := range cs {
		code := c.code()
		byCode[code]++
		if _, ok := sample[code]; !ok {
			sample[code] = c.err
		}
	}
	return byCode, sample
}

// faultLog is a slog.Handler that fails the test on Error records and logs the others.
type faultLog struct{ t *testing.T }

func (faultLog) Enabled(context.Context, slog.Level) bool { return true }

func (l faultLog) Handle(_ context.Context, rec slog.Record) error {
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

func (l faultLog) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l faultLog) WithGroup(string) slog.Handler      { return l }

// faultHold returns a handler that holds every call until release is closed or the call's
// context ends, then echoes its Message; seen counts the calls by Message.
func faultHold(release <-chan struct{}, seen *faultSeen) func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if seen != nil {
			seen.add(req.GetMessage())
		}
		select {
		case <-release:
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// faultSeen counts server-side arrivals by Message, to prove no call reached the server twice.
type faultSeen struct {
	mu sync.Mutex
	n  map[string]int
}

func newFaultSeen() *faultSeen { return &faultSeen{n: map[string]int{}} }

func (s *faultSeen) add(msg string) {
	s.mu.Lock()
	s.n[msg]++
	s.mu.Unlock()
}

// check returns the number of distinct messages seen and the messages seen more than once.
func (s *faultSeen) check() (distinct int, dups []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m, n := range s.n {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", m, n))
		}
	}
	return len(s.n), dups
}

// snapshot returns the messages seen so far.
func (s *faultSeen) snapshot() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.n))
	for m := range s.n {
		out[m] = true
	}
	return out
}

func (s *faultSeen) has(msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[msg] > 0
}
