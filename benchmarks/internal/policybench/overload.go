package policybench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// Mode is what a case of the overload scenario sets in reactor.Config: its lanes and its
// in-flight limit. OverloadConfig.reactorConfig is the one place that says what each mode
// sets.
type Mode int

const (
	// ModeDefault leaves Workers, BatchSize and AdaptiveLimit to their defaults, as a new
	// user's Config does.
	ModeDefault Mode = iota
	// ModeAdaptive sets AdaptiveLimit to &AdaptiveLimit{}, the limit with its defaults, over
	// the default lanes.
	ModeAdaptive
	// ModeFixed sets a fixed number of lanes, OverloadConfig.FixedLanes, as Workers 1 ×
	// BatchSize FixedLanes, without an adaptive limit: a limit tuned by hand to the backend.
	ModeFixed
)

// String returns the mode's name as the cases' names use it: "default", "adaptive" or
// "fixed".
func (m Mode) String() string {
	switch m {
	case ModeDefault:
		return "default"
	case ModeAdaptive:
		return "adaptive"
	case ModeFixed:
		return "fixed"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Phase is a stretch of the overload scenario's load: Rate calls a second, submitted for For.
type Phase struct {
	Rate int
	For  time.Duration
}

// OverloadConfig is one case of the overload scenario: a backend of Workers workers with a
// queue in front of them, each call waiting for a free worker, in order, then taking Service
// of it, so that a call's time grows with the calls queued; and a host that submits, open-loop,
// at each tick of TickEvery, the calls the load asks for — Overload's rate for its time, then
// Recovery's — each with Timeout, then calls Tick, drains the reactor whenever it signals
// Ready between ticks, as loop.Run does, and keeps ticking until every call's callback has
// run.
type OverloadConfig struct {
	// Workers is the backend's workers and Service each call's time on one: it serves
	// Workers/Service calls a second.
	Workers int
	Service time.Duration
	// ServesCancelled makes the backend serve every call it received, as a thread pool in
	// front of a database does (its queued queries run even after their client has gone), so
	// that it spends its workers on calls whose clients gave up; otherwise it drops a call
	// cancelled while it waits for a worker (a Go handler that selects on its context). Once
	// a call has a worker, both finish it.
	ServesCancelled bool
	// Timeout is every call's timeout; TickEvery the host's tick interval.
	Timeout, TickEvery time.Duration
	// Overload is the load above the backend's capacity, Recovery the load after it drops.
	// Each rate times TickEvery must be a whole number of calls per tick.
	Overload, Recovery Phase
	// Bucket is the length of the stretches the goodput is given by (OverloadResult.OKBy).
	Bucket time.Duration
	// Mode is what the reactor's Config sets; FixedLanes the lanes under ModeFixed.
	Mode       Mode
	FixedLanes int
}

// DefaultOverload is the scenario's shape as the benchmarks run it, for the backend that
// serves cancelled calls and the default Config: a guild game's GetGuild read against a
// backend of 4 workers of 20 ms each (200 calls a second at most), offered 400 calls a second
// with 150 ms timeouts for 6 s, then 100 a second for 4 s, from a host that ticks every 50 ms
// as a game server at 20 ticks a second does, so that its calls come 20, then 5, at a time;
// the goodput by second; 4 lanes under ModeFixed.
func DefaultOverload() OverloadConfig {
	return OverloadConfig{Workers: 4, Service: 20 * time.Millisecond, ServesCancelled: true,
		Timeout: 150 * time.Millisecond, TickEvery: 50 * time.Millisecond,
		Overload: Phase{Rate: 400, For: 6 * time.Second}, Recovery: Phase{Rate: 100, For: 4 * time.Second},
		Bucket: time.Second, FixedLanes: 4}
}

// Short returns c with short phases, the goodput by tenth of a second, for tests.
func (c OverloadConfig) Short() OverloadConfig {
	c.Overload.For, c.Recovery.For, c.Bucket = 300*time.Millisecond, 200*time.Millisecond, 100*time.Millisecond
	return c
}

// reactorConfig returns the reactor's Config for a backend at target: every call's timeout
// Timeout, and the lanes and the in-flight limit as c.Mode says. It is the one place that
// says what each mode sets.
func (c OverloadConfig) reactorConfig(target string) reactor.Config {
	cfg := reactor.Config{Target: target, Credentials: reactor.Insecure(), DefaultTimeout: c.Timeout}
	switch c.Mode {
	case ModeDefault: // every field the scenario varies left to its default
	case ModeAdaptive:
		cfg.AdaptiveLimit = &reactor.AdaptiveLimit{}
	case ModeFixed:
		cfg.Workers, cfg.BatchSize = 1, c.FixedLanes
		cfg.AdaptiveLimit = &reactor.AdaptiveLimit{Disabled: true}
	default:
		panic(fmt.Sprintf("policybench: unknown overload mode %d", int(c.Mode)))
	}
	return cfg
}

// ConfigText says what c's mode sets in reactor.Config, as a Go programmer would write it:
// "defaults" when it sets nothing, else its fields, as in "Workers 1, BatchSize 4" or
// "AdaptiveLimit{}".
func (c OverloadConfig) ConfigText() string {
	cfg := c.reactorConfig("")
	var set []string
	if cfg.Workers != 0 {
		set = append(set, fmt.Sprintf("Workers %d", cfg.Workers))
	}
	if cfg.BatchSize != 0 {
		set = append(set, fmt.Sprintf("BatchSize %d", cfg.BatchSize))
	}
	if cfg.AdaptiveLimit != nil {
		set = append(set, "AdaptiveLimit"+fieldsText(reflect.ValueOf(*cfg.AdaptiveLimit)))
	}
	if len(set) == 0 {
		return "defaults"
	}
	return strings.Join(set, ", ")
}

// fieldsText writes the struct v as a composite literal of its fields that are not zero, as
// in "{}" or "{Floor: 2}".
func fieldsText(v reflect.Value) string {
	var fs []string
	for i := range v.NumField() {
		if f := v.Field(i); v.Type().Field(i).IsExported() && !f.IsZero() {
			fs = append(fs, fmt.Sprintf("%s: %v", v.Type().Field(i).Name, f.Interface()))
		}
	}
	return "{" + strings.Join(fs, ", ") + "}"
}

// Lanes returns the reactor's lanes in c's mode, Workers × BatchSize with the defaults filled
// in, as "4×8".
func (c OverloadConfig) Lanes() string {
	cfg := c.reactorConfig("")
	return fmt.Sprintf("%d×%d", cmp.Or(cfg.Workers, reactor.DefaultWorkers), cmp.Or(cfg.BatchSize, reactor.DefaultBatchSize))
}

// Backend names the backend: "serves-cancelled" or "drops-cancelled".
func (c OverloadConfig) Backend() string {
	if c.ServesCancelled {
		return "serves-cancelled"
	}
	return "drops-cancelled"
}

// Name names the case as BenchmarkOverload's sub-benchmark: the backend, then the mode, with
// the lanes when they are fixed, as in "serves-cancelled/adaptive" or
// "drops-cancelled/fixed-4".
func (c OverloadConfig) Name() string {
	if c.Mode == ModeFixed {
		return fmt.Sprintf("%s/%s-%d", c.Backend(), c.Mode, c.FixedLanes)
	}
	return fmt.Sprintf("%s/%s", c.Backend(), c.Mode)
}

// OverloadCases returns the scenario's cases over base: for each backend, the one that serves
// cancelled calls, then the one that drops them, the default Config, the adaptive limit and
// the fixed lanes.
func OverloadCases(base OverloadConfig) []OverloadConfig {
	var cs []OverloadConfig
	for _, serves := range []bool{true, false} {
		for _, m := range []Mode{ModeDefault, ModeAdaptive, ModeFixed} {
			c := base
			c.ServesCancelled, c.Mode = serves, m
			cs = append(cs, c)
		}
	}
	return cs
}

// perTick returns the calls each of p's ticks submits, or an error naming field if p's rate
// is not a whole number of calls per tick.
func (c OverloadConfig) perTick(p Phase, field string) (int, error) {
	per := time.Duration(p.Rate) * c.TickEvery
	if p.Rate <= 0 || p.For <= 0 || per%time.Second != 0 || p.For%c.TickEvery != 0 {
		return 0, fmt.Errorf("policybench: overload %s %+v: want a rate above 0 that makes whole calls per tick of %v, for whole ticks", field, p, c.TickEvery)
	}
	return int(per / time.Second), nil
}

// OverloadResult is what one run of the scenario saw. Every call the host submitted counts
// once among OK, Timeouts, Shed, Refused and Failed.
type OverloadResult struct {
	// Overload is the time the overload lasted, Bucket the length of the stretches of OKBy.
	Overload, Bucket time.Duration
	// Submitted is the calls the host submitted; Recovery those of them it submitted after
	// the load dropped.
	Submitted, Recovery int64
	// OK is the calls that succeeded; OverloadOK and RecoveryOK those of them submitted
	// during the overload and after it; OKBy those submitted in each Bucket of the run.
	OK, OverloadOK, RecoveryOK int64
	OKBy                       []int64
	// Timeouts is the calls that failed with ErrTimeout; Shed those that prpc failed without
	// sending them for another reason than their deadline, a refusal, a cancel or Close (a
	// reactor that sheds calls it judges unable to finish in time); Refused those failed at
	// submission with ErrOverloaded; Failed those that failed otherwise.
	Timeouts, Shed, Refused, Failed int64
	// NeverSent is the calls that failed without being sent (calls.Error.NotSent): refused,
	// shed, or timed out in prpc's queue.
	NeverSent int64
	// Executions is the calls the backend took a worker for; Wasted those of them whose
	// client had given up by the time the worker finished.
	Executions, Wasted int64
	// Limit is Stats.InFlightLimit at the end of the overload; 0 without an adaptive limit.
	Limit int
	// P50 and P99 are the latencies, from submission to callback, of the calls submitted
	// during the overload that succeeded, by nearest rank; 0 if none did.
	P50, P99 time.Duration
}

// Goodput is the calls submitted during the overload that succeeded, per second of it.
func (r OverloadResult) Goodput() float64 { return float64(r.OverloadOK) / r.Overload.Seconds() }

// GoodputBy is OKBy per second of each bucket.
func (r OverloadResult) GoodputBy() []float64 {
	out := make([]float64, len(r.OKBy))
	for i, n := range r.OKBy {
		out[i] = float64(n) / r.Bucket.Seconds()
	}
	return out
}

// WastedShare is Wasted as a share of Executions, 0 without executions.
func (r OverloadResult) WastedShare() float64 {
	if r.Executions == 0 {
		return 0
	}
	return float64(r.Wasted) / float64(r.Executions)
}

// outcome is how one call of the scenario ended.
type outcome int

const (
	outcomeOK outcome = iota
	outcomeTimeout
	outcomeShed
	outcomeRefused
	outcomeFailed
)

// outcomeOf classifies a call's error, and reports whether the call was never sent: a
// timeout, a refusal (ErrOverloaded), a call prpc shed (ErrShed: it could not finish in time),
// or another failure.
func outcomeOf(err error) (o outcome, notSent bool) {
	if err == nil {
		return outcomeOK, false
	}
	var ce *calls.Error
	notSent = errors.As(err, &ce) && ce.NotSent()
	switch {
	case errors.Is(err, calls.ErrTimeout):
		return outcomeTimeout, notSent
	case errors.Is(err, calls.ErrOverloaded):
		return outcomeRefused, true
	case errors.Is(err, calls.ErrShed):
		return outcomeShed, true
	case !notSent || ce.Kind() == nil:
		return outcomeFailed, notSent
	}
	return outcomeFailed, true
}

// overloadBackend is the scenario's backend: its workers, its counts, and stop, closed when
// the run ends, which sends the calls still waiting for a worker away unserved.
type overloadBackend struct {
	workers            chan struct{}
	service            time.Duration
	serves             bool // serves every call, cancelled or not
	stop               chan struct{}
	executions, wasted atomic.Int64
}

func newOverloadBackend(cfg OverloadConfig) *overloadBackend {
	return &overloadBackend{workers: make(chan struct{}, cfg.Workers), service: cfg.Service, serves: cfg.ServesCancelled, stop: make(chan struct{})}
}

// errStopped is what the backend answers the calls still waiting for a worker when the run
// ends.
var errStopped = status.Error(codes.Unavailable, "policybench: the backend stopped")

// handle serves one call: it waits for a worker, unless the backend drops calls and this one
// is cancelled first, or the run ends first; then holds the worker for the service time, and
// counts the call wasted if its client has given up by then.
func (b *overloadBackend) handle(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	cancelled := ctx.Done()
	if b.serves {
		cancelled = nil // never ready
	}
	select {
	case b.workers <- struct{}{}:
	case <-cancelled: // cancelled while queued: no work done
		return nil, ctx.Err()
	case <-b.stop:
		return nil, errStopped
	}
	select {
	case <-b.stop: // the run ended while this call won a worker: not served
		<-b.workers
		return nil, errStopped
	default:
	}
	b.executions.Add(1)
	time.Sleep(b.service) // the work
	<-b.workers
	if ctx.Err() != nil {
		b.wasted.Add(1)
	}
	return &testpb.EchoResponse{Message: req.GetMessage()}, nil
}

// stopServing ends the run for the calls still waiting for a worker: they are sent away
// unserved.
func (b *overloadBackend) stopServing() { close(b.stop) }

// RunOverload runs cfg once, against a backend of its own: one call to connect, then the
// load, tick by tick, then ticks until every call's callback has run; then it shuts the
// reactor down, sends away the calls the backend still holds unserved, and stops the backend
// once the calls it is serving finish. The backend's counts cover the load alone.
func RunOverload(cfg OverloadConfig) (res OverloadResult, err error) {
	overPer, recPer, err := cfg.check()
	if err != nil {
		return res, err
	}
	be := newOverloadBackend(cfg)
	g, err := startRig(func(addrs []string) reactor.Config { return cfg.reactorConfig(addrs[0]) }, be.handle)
	if err != nil {
		return res, err
	}
	g.beforeStop = be.stopServing
	defer func() { err = errors.Join(err, g.close()) }()
	if err := g.warmUp("the overload's warm-up call"); err != nil {
		return res, err
	}
	exec0, wasted0 := be.executions.Load(), be.wasted.Load()
	o := newOverloadRun(cfg, g)
	defer o.timer.Stop()
	if err := o.load(overPer, recPer); err != nil {
		return o.res, err
	}
	if err := o.settle(); err != nil {
		return o.res, err
	}
	if err := g.shutdown(time.Second); err != nil {
		return o.res, err
	}
	res = o.res
	res.Executions, res.Wasted = be.executions.Load()-exec0, be.wasted.Load()-wasted0
	res.P50, res.P99 = percentiles(o.latencies)
	return res, nil
}

// check returns the calls each tick of the overload and of the recovery submits, or an error
// naming the field of c that the run cannot take.
func (c OverloadConfig) check() (overPer, recPer int, err error) {
	if overPer, err = c.perTick(c.Overload, "Overload"); err != nil {
		return 0, 0, err
	}
	if recPer, err = c.perTick(c.Recovery, "Recovery"); err != nil {
		return 0, 0, err
	}
	if c.Bucket <= 0 {
		return 0, 0, fmt.Errorf("policybench: overload Bucket %v: want a duration above 0", c.Bucket)
	}
	return overPer, recPer, nil
}

// overloadRun is the load of one run of the scenario, on the host goroutine: what the calls'
// callbacks have counted so far, and the times the host's ticks keep to.
type overloadRun struct {
	cfg       OverloadConfig
	g         *rig
	req       *testpb.EchoRequest
	res       OverloadResult
	latencies []time.Duration // of the calls submitted during the overload that succeeded
	timer     *time.Timer     // await's
	start     time.Time       // the load's first tick
	ticks     int             // the load's ticks, overload and recovery
}

// newOverloadRun prepares the load of cfg on g's reactor.
func newOverloadRun(cfg OverloadConfig, g *rig) *overloadRun {
	total := cfg.Overload.For + cfg.Recovery.For
	o := &overloadRun{cfg: cfg, g: g, req: &testpb.EchoRequest{Message: "GetGuild"},
		timer: time.NewTimer(time.Hour), ticks: int(total / cfg.TickEvery)}
	o.res.Overload, o.res.Bucket = cfg.Overload.For, cfg.Bucket
	o.res.OKBy = make([]int64, (total+cfg.Bucket-1)/cfg.Bucket)
	return o
}

// load submits the load from now, tick by tick: at each tick of TickEvery, overPer calls
// during the overload and recPer after it, then one Tick. It reads the in-flight limit at the
// first tick after the overload.
func (o *overloadRun) load(overPer, recPer int) error {
	overTicks := int(o.cfg.Overload.For / o.cfg.TickEvery)
	o.start = time.Now()
	for n := range o.ticks {
		o.await(o.start.Add(time.Duration(n) * o.cfg.TickEvery))
		per, recovery := overPer, n >= overTicks
		if recovery {
			per = recPer
		}
		if n == overTicks {
			o.res.Limit = o.g.r.Stats().InFlightLimit
		}
		bucket := int(time.Duration(n) * o.cfg.TickEvery / o.cfg.Bucket)
		for range per {
			if err := o.submit(bucket, recovery); err != nil {
				return err
			}
		}
		o.g.r.Tick(2 * time.Millisecond)
	}
	return nil
}

// submit submits one call of the load, in bucket, after the load dropped if recovery. A call
// the reactor refuses with ErrOverloaded counts as its callback says; any other refusal is a
// bug, which submit returns.
func (o *overloadRun) submit(bucket int, recovery bool) error {
	submitted := time.Now()
	o.res.Submitted++
	if recovery {
		o.res.Recovery++
	}
	err := o.g.submit(o.req, func(err error) { o.record(err, bucket, recovery, submitted) })
	if err != nil && !errors.Is(err, calls.ErrOverloaded) {
		return err
	}
	return nil
}

// record counts how a call submitted at submitted, in bucket, after the load dropped if
// recovery, ended with err.
func (o *overloadRun) record(err error, bucket int, recovery bool, submitted time.Time) {
	oc, notSent := outcomeOf(err)
	if notSent {
		o.res.NeverSent++
	}
	switch oc {
	case outcomeOK:
		o.res.OK++
		o.res.OKBy[bucket]++
		if recovery {
			o.res.RecoveryOK++
		} else {
			o.res.OverloadOK++
			o.latencies = append(o.latencies, time.Since(submitted))
		}
	case outcomeTimeout:
		o.res.Timeouts++
	case outcomeShed:
		o.res.Shed++
	case outcomeRefused:
		o.res.Refused++
	default:
		o.res.Failed++
	}
}

// settle keeps ticking, at each TickEvery after the load's last tick, until every call's
// callback has run. Every call has a deadline, so every callback runs within Timeout of the
// last submission; the bound only keeps a broken reactor from hanging the run.
func (o *overloadRun) settle() error {
	give := time.Now().Add(o.cfg.Timeout + 10*time.Second)
	for next := o.start.Add(time.Duration(o.ticks) * o.cfg.TickEvery); o.g.pending > 0; next = next.Add(o.cfg.TickEvery) {
		if time.Now().After(give) {
			return fmt.Errorf("policybench: %d of the overload's %d calls still unsettled", o.g.pending, o.res.Submitted)
		}
		o.await(next)
		o.g.r.Tick(2 * time.Millisecond)
	}
	return nil
}

// await waits until t, draining the reactor each time it signals Ready meanwhile, as loop.Run
// does between ticks, so that a callback runs when its response arrives rather than at the
// next tick.
func (o *overloadRun) await(t time.Time) {
	for d := time.Until(t); d > 0; d = time.Until(t) {
		o.timer.Reset(d)
		select {
		case <-o.timer.C:
			return
		case <-o.g.r.Ready():
			o.g.r.Tick(2 * time.Millisecond)
		}
	}
}
