package loop_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// At the default 20 TPS.
const period = 50 * time.Millisecond

// patience bounds every wait of these tests, so that a bug fails them instead of hanging.
const patience = 10 * time.Second

var epoch = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// recorder logs what the loop calls, in order, with the goroutine that called it.
type recorder struct {
	mu         sync.Mutex
	events     []string
	goroutines map[uint64]bool
	changed    chan struct{}
}

func newRecorder() *recorder {
	return &recorder{goroutines: make(map[uint64]bool), changed: make(chan struct{})}
}

func (r *recorder) add(format string, args ...any) {
	g := goid()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, fmt.Sprintf(format, args...))
	r.goroutines[g] = true
	close(r.changed)
	r.changed = make(chan struct{})
}

// take returns the events logged since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	e := r.events
	r.events = nil
	return e
}

// wait waits until at least n events are logged since the last take.
func (r *recorder) wait(t *testing.T, n int) {
	t.Helper()
	timeout := time.After(patience)
	for {
		r.mu.Lock()
		k, changed := len(r.events), r.changed
		r.mu.Unlock()
		if k >= n {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("waited %v for %d events, have %d", patience, n, k)
		}
	}
}

// callers returns the goroutines that logged events.
func (r *recorder) callers() []uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gs []uint64
	for g := range r.goroutines {
		gs = append(gs, g)
	}
	return gs
}

// goid returns the calling goroutine's id, from the header of its stack trace.
func goid() uint64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, err := strconv.ParseUint(s[:strings.IndexByte(s, ' ')], 10, 64)
	if err != nil {
		panic(err)
	}
	return id
}

// fakeReactor records its Tick calls; the test controls its Ready channel, what its next Tick
// reports, and how far its next Tick moves the clock.
type fakeReactor struct {
	name  string
	rec   *recorder
	clk   *reactortest.ManualClock
	ready chan struct{}

	mu      sync.Mutex
	budgets []time.Duration
	report  int
	cost    time.Duration
}

func newFake(name string, rec *recorder, clk *reactortest.ManualClock) *fakeReactor {
	return &fakeReactor{name: name, rec: rec, clk: clk, ready: make(chan struct{}, 1)}
}

func (f *fakeReactor) Tick(budget time.Duration) reactor.TickReport {
	f.mu.Lock()
	f.budgets = append(f.budgets, budget)
	n, cost := f.report, f.cost
	f.report, f.cost = 0, 0
	f.mu.Unlock()
	f.rec.add("%s.Tick", f.name)
	if cost > 0 {
		f.clk.Advance(cost)
	}
	return reactor.TickReport{Delivered: n, Elapsed: cost}
}

func (f *fakeReactor) Ready() <-chan struct{} { return f.ready }

// next sets what the next Tick reports as delivered and how long it takes.
func (f *fakeReactor) next(delivered int, cost time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.report, f.cost = delivered, cost
}

// signal sends on Ready, which must be empty.
func (f *fakeReactor) signal(t *testing.T) {
	t.Helper()
	select {
	case f.ready <- struct{}{}:
	default:
		t.Fatalf("%s: Ready already holds a signal", f.name)
	}
}

func (f *fakeReactor) tickBudgets() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Duration(nil), f.budgets...)
}

// closableFake is a fakeReactor with Close.
type closableFake struct {
	*fakeReactor
	err error

	cmu      sync.Mutex
	closeCtx context.Context
	ctxErr   error
}

func (c *closableFake) Close(ctx context.Context) error {
	c.rec.add("%s.Close", c.name)
	c.cmu.Lock()
	defer c.cmu.Unlock()
	c.closeCtx, c.ctxErr = ctx, ctx.Err()
	return c.err
}

// drainableFake is a closableFake with Idle: it is busy until its Tick has run busyTicks
// more times.
type drainableFake struct {
	*closableFake
	busyTicks atomic.Int32
}

func newDrainable(name string, rec *recorder, clk *reactortest.ManualClock, busyTicks int32) *drainableFake {
	d := &drainableFake{closableFake: &closableFake{fakeReactor: newFake(name, rec, clk)}}
	d.busyTicks.Store(busyTicks)
	return d
}

func (d *drainableFake) Tick(budget time.Duration) reactor.TickReport {
	d.busyTicks.Add(-1)
	return d.fakeReactor.Tick(budget)
}

func (d *drainableFake) Idle() bool { return d.busyTicks.Load() <= 0 }

// harness runs a Loop on its own goroutine with a manual clock.
type harness struct {
	t      *testing.T
	clk    *reactortest.ManualClock
	rec    *recorder
	loop   *loop.Loop
	cancel context.CancelFunc
	done   chan error
	runG   uint64
	result *error
}

// newHarness makes a recorder and a clock for cfg's hooks to use; start runs the loop.
func newHarness(t *testing.T) *harness {
	return &harness{t: t, clk: reactortest.NewManualClock(epoch), rec: newRecorder()}
}

// start creates the Loop with h's clock and runs it; it returns once the first tick has run
// and the loop waits for the second.
func (h *harness) start(cfg loop.Config) {
	t := h.t
	t.Helper()
	cfg.Clock = h.clk
	l, err := loop.New(cfg)
	require.NoError(t, err)
	h.loop = l
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	gch := make(chan uint64, 1)
	go func() {
		gch <- goid()
		h.done <- l.Run(ctx)
	}()
	h.runG = <-gch
	t.Cleanup(func() {
		cancel()
		if h.result == nil {
			select {
			case <-h.done:
			case <-time.After(patience):
				t.Errorf("Run did not return within %v of cancel", patience)
			}
		}
	})
	h.waitBlocked()
}

// waitBlocked waits until the loop has set its tick timer: the tick (or wake-up) in progress
// has finished and been recorded in Stats.
func (h *harness) waitBlocked() {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	require.NoError(h.t, h.clk.WaitTimers(ctx, 1), "the loop did not set its timer")
}

// cancelAndWait cancels Run's context and waits until OnStop has been recorded (as the only
// event since the last take) and the loop, draining, waits for its next tick.
func (h *harness) cancelAndWait() {
	h.t.Helper()
	h.cancel()
	h.rec.wait(h.t, 1)
	require.Equal(h.t, []string{"OnStop"}, h.rec.take())
	h.waitBlocked()
}

// wait waits for Run's result after the test stopped it.
func (h *harness) wait() error {
	h.t.Helper()
	select {
	case err := <-h.done:
		h.result = &err
		return err
	case <-time.After(patience):
		h.t.Fatalf("Run did not return within %v", patience)
		return nil
	}
}

// stop cancels the context and returns Run's result.
func (h *harness) stop() error {
	h.t.Helper()
	h.cancel()
	return h.wait()
}
