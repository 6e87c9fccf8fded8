package policybench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/benchmarks/internal/rank"
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

// RunOverload runs cfg once, against a backend of its own: one call to connect, then the
// load, tick by tick, then ticks until every call's callback has run; then it shuts the
// reactor down, sends away the calls the backend still holds unserved, and stops the backend
// once the calls it is serving finish. The backend's counts cover the load alone.
func RunOverload(cfg OverloadConfig) (res OverloadResult, err error) {
	overPer, err := cfg.perTick(cfg.Overload, "Overload")
	if err != nil {
		return res, err
	}
	recPer, err := cfg.perTick(cfg.Recovery, "Recovery")
	if err != nil {
		return res, err
	}
	if cfg.Bucket <= 0 {
		return res, fmt.Errorf("policybench: overload Bucket %v: want a duration above 0", cfg.Bucket)
	}
	be := newOverloadBackend(cfg)
	srv, err := StartServer(be.handle)
	if err != nil {
		return res, err
	}
	stopped := false
	defer func() {
		if !stopped {
			close(be.stop)
			err = errors.Join(err, srv.Stop())
		}
	}()
	r, err := reactor.New(cfg.reactorConfig(srv.Addr()))
	if err != nil {
		return res, err
	}
	closed := false
	defer func() {
		if !closed {
			err = errors.Join(err, r.Close(context.Background()))
		}
	}()

	warm := make(chan error, 1)
	if err := reactor.Go(r, echo, &testpb.EchoRequest{Message: "warm-up"}, nil, func(_ *testpb.EchoResponse, err error) { warm <- err }); err != nil {
		return res, err
	}
	for len(warm) == 0 {
		<-r.Ready()
		r.Tick(time.Second)
	}
	if err := <-warm; err != nil {
		return res, fmt.Errorf("policybench: the overload's warm-up call: %w", err)
	}
	exec0, wasted0 := be.executions.Load(), be.wasted.Load()

	total := cfg.Overload.For + cfg.Recovery.For
	res.Overload, res.Bucket = cfg.Overload.For, cfg.Bucket
	res.OKBy = make([]int64, (total+cfg.Bucket-1)/cfg.Bucket)
	overTicks, ticks := int(cfg.Overload.For/cfg.TickEvery), int(total/cfg.TickEvery)
	var settled int64
	var latencies []time.Duration
	req := &testpb.EchoRequest{Message: "GetGuild"}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	// await waits until t, draining the reactor each time it signals Ready meanwhile, as
	// loop.Run does between ticks, so that a callback runs when its response arrives rather
	// than at the next tick.
	await := func(t time.Time) {
		for d := time.Until(t); d > 0; d = time.Until(t) {
			timer.Reset(d)
			select {
			case <-timer.C:
				return
			case <-r.Ready():
				r.Tick(2 * time.Millisecond)
			}
		}
	}
	start := time.Now()
	for n := range ticks {
		await(start.Add(time.Duration(n) * cfg.TickEvery))
		per, recovery := overPer, n >= overTicks
		if recovery {
			per = recPer
		}
		if n == overTicks {
			res.Limit = r.Stats().InFlightLimit
		}
		bucket := int(time.Duration(n) * cfg.TickEvery / cfg.Bucket)
		for range per {
			submitted := time.Now()
			res.Submitted++
			if recovery {
				res.Recovery++
			}
			err := reactor.Go(r, echo, req, nil, func(_ *testpb.EchoResponse, err error) {
				settled++
				o, notSent := outcomeOf(err)
				if notSent {
					res.NeverSent++
				}
				switch o {
				case outcomeOK:
					res.OK++
					res.OKBy[bucket]++
					if recovery {
						res.RecoveryOK++
					} else {
						res.OverloadOK++
						latencies = append(latencies, time.Since(submitted))
					}
				case outcomeTimeout:
					res.Timeouts++
				case outcomeShed:
					res.Shed++
				case outcomeRefused:
					res.Refused++
				default:
					res.Failed++
				}
			})
			if err != nil && !errors.Is(err, calls.ErrOverloaded) {
				return res, err // the callback counts a refusal; anything else is a bug
			}
		}
		r.Tick(2 * time.Millisecond)
	}
	// Every call has a deadline, so every callback runs within Timeout of the last
	// submission; the bound only keeps a broken reactor from hanging the run.
	give := time.Now().Add(cfg.Timeout + 10*time.Second)
	for next := start.Add(time.Duration(ticks) * cfg.TickEvery); settled < res.Submitted; next = next.Add(cfg.TickEvery) {
		if time.Now().After(give) {
			return res, fmt.Errorf("policybench: %d of the overload's %d calls still unsettled", res.Submitted-settled, res.Submitted)
		}
		await(next)
		r.Tick(2 * time.Millisecond)
	}
	closed = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := r.Shutdown(ctx); err != nil {
		return res, err
	}
	stopped = true
	close(be.stop)
	if err := srv.Stop(); err != nil {
		return res, err
	}
	res.Executions, res.Wasted = be.executions.Load()-exec0, be.wasted.Load()-wasted0
	slices.Sort(latencies)
	res.P50, res.P99 = rank.Percentile(latencies, 50), rank.Percentile(latencies, 99)
	return res, nil
}
