package policybench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// Arrival is how the reads of the spread-arrivals scenario come to the reactor.
type Arrival int

// The arrivals of the spread-arrivals scenario.
const (
	// PerPlayer submits each read from a goroutine of its own, as a game whose players each
	// run their own goroutine does: the i-th read i × SpreadConfig.Every after the first,
	// when a pacer goroutine gives it its turn. The pacer yields (runtime.Gosched) until each
	// turn is due rather than sleeping, so that the reads keep their spacing instead of
	// bunching as Go's timers fire; it keeps a core busy while the reads are submitted.
	PerPlayer Arrival = iota
	// PerTick submits SpreadConfig.PerTick reads on the host goroutine at each tick, before
	// the tick's Tick, as game logic run by the tick loop does.
	PerTick
)

// String returns "per-player" or "per-tick".
func (a Arrival) String() string {
	switch a {
	case PerPlayer:
		return "per-player"
	case PerTick:
		return "per-tick"
	}
	return fmt.Sprintf("Arrival(%d)", int(a))
}

// SpreadConfig is one case of the spread-arrivals scenario: Calls identical reads of a
// leaderboard that the server answers after Service, arriving as Arrival says, spread over
// milliseconds or ticks rather than all in one tick, to a reactor that a host loop ticks every
// TickEvery; with the method's calls coalesced (MethodPolicy.Coalesce, its default
// CoalesceMax) or not. The reactor has the default lanes.
type SpreadConfig struct {
	Arrival Arrival
	// Calls is the reads submitted in all.
	Calls int
	// Every is the time between two players' submissions (PerPlayer).
	Every time.Duration
	// PerTick is the reads submitted at each tick (PerTick).
	PerTick int
	// TickEvery is the host loop's interval: it calls Tick every TickEvery until every read
	// is delivered.
	TickEvery time.Duration
	// Service is the time the server takes to answer each call it receives, in whole
	// milliseconds (EchoRequest.DelayMs).
	Service time.Duration
	// Timeout is every read's timeout.
	Timeout time.Duration
	// Coalesce is the method's MethodPolicy.Coalesce.
	Coalesce bool
}

// DefaultSpread is the scenario's shape for arrival a, coalescing off, each read with a
// timeout of 1 s and the host ticking every 50 ms:
//
//   - PerPlayer: 200 reads of a leaderboard that takes 320 ms, one every 250 µs, each from
//     a goroutine of its own;
//   - PerTick: 10 reads at each of 20 ticks, of a leaderboard that takes 300 ms, so that
//     each read is in flight for 6 ticks.
func DefaultSpread(a Arrival) SpreadConfig {
	c := SpreadConfig{Arrival: a, Calls: 200, TickEvery: 50 * time.Millisecond, Timeout: time.Second}
	if a == PerPlayer {
		c.Every, c.Service = 250*time.Microsecond, 320*time.Millisecond
	} else {
		c.PerTick, c.Service = 10, 300*time.Millisecond
	}
	return c
}

// Short returns c with fewer reads, a quicker server and shorter ticks, in the same
// proportions of ticks to the server's time, for tests.
func (c SpreadConfig) Short() SpreadConfig {
	c.Calls, c.Service, c.TickEvery = 40, (c.Service / 10).Truncate(time.Millisecond), c.TickEvery/10
	return c
}

// Span is the time over which the reads are submitted: from the first to the last.
func (c SpreadConfig) Span() time.Duration {
	if c.Arrival == PerPlayer {
		return time.Duration(c.Calls-1) * c.Every
	}
	return time.Duration((c.Calls+c.PerTick-1)/c.PerTick-1) * c.TickEvery
}

// SpreadCase is one case of the scenario, named as BenchmarkCoalescedSpread's sub-benchmark.
type SpreadCase struct {
	Name   string
	Config SpreadConfig
}

// SpreadCases returns the scenario's cases over each of bases: coalescing off
// ("<arrival>/off") then on ("<arrival>/on").
func SpreadCases(bases ...SpreadConfig) []SpreadCase {
	var cs []SpreadCase
	for _, base := range bases {
		off, on := base, base
		off.Coalesce, on.Coalesce = false, true
		cs = append(cs, SpreadCase{base.Arrival.String() + "/off", off}, SpreadCase{base.Arrival.String() + "/on", on})
	}
	return cs
}

// SpreadResult is what one run of the scenario saw.
type SpreadResult struct {
	// Calls is the reads submitted, OK those that succeeded, DeadlineExceeded those that
	// failed with that code, and Failed those that failed otherwise or that reactor.Go
	// refused.
	Calls, OK, DeadlineExceeded, Failed int
	// BackendCalls is the transport calls the server received for the reads.
	BackendCalls int64
	// Coalesced is the method's MethodStats.Coalesced over the reads: those that joined
	// another's transport call.
	Coalesced uint64
	// LastDelivery is the time from the first submission to the last delivery.
	LastDelivery time.Duration
}

// spreadSlack bounds how long after the last read's deadline RunSpread waits for it to be
// delivered before it gives up: a read the reactor never settles.
const spreadSlack = 5 * time.Second

// RunSpread runs cfg once, against a server of its own: it connects with one read of another
// key, then submits cfg.Calls reads as cfg.Arrival says while its host loop ticks the reactor
// every cfg.TickEvery, until every read is delivered.
func RunSpread(cfg SpreadConfig) (res SpreadResult, err error) {
	srv, err := StartServer(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if !delay(ctx, time.Duration(req.GetDelayMs())*time.Millisecond) {
			return nil, status.FromContextError(ctx.Err()).Err()
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, srv.Stop()) }()
	r, err := reactor.New(reactor.Config{
		Target: srv.Addr(), Credentials: reactor.Insecure(), MaxOutstanding: 2 * cfg.Calls, DefaultTimeout: cfg.Timeout,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Coalesce: cfg.Coalesce}},
	})
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, r.Close(context.Background())) }()
	warm := make(chan error, 1)
	if err := reactor.Go(r, echo, &testpb.EchoRequest{Message: "warm-up"}, nil, func(_ *testpb.EchoResponse, err error) { warm <- err }); err != nil {
		return res, err
	}
	for len(warm) == 0 {
		<-r.Ready()
		r.Tick(time.Second)
	}
	if err := <-warm; err != nil {
		return res, fmt.Errorf("policybench: the warm-up read: %w", err)
	}
	calls0, stats0 := srv.Calls(), r.Stats().Methods[echo.Path()]

	delayMs := cfg.Service.Milliseconds()
	var delivered int
	var refused atomic.Int64
	var start time.Time
	done := func(_ *testpb.EchoResponse, err error) { // on the host goroutine, in Tick
		delivered++
		res.LastDelivery = time.Since(start)
		switch status.Code(err) {
		case codes.OK:
			res.OK++
		case codes.DeadlineExceeded:
			res.DeadlineExceeded++
		default:
			res.Failed++
		}
	}
	read := func() {
		if err := reactor.Go(r, echo, &testpb.EchoRequest{Message: "leaderboard", DelayMs: delayMs}, nil, done); err != nil {
			refused.Add(1)
		}
	}
	var players sync.WaitGroup
	defer players.Wait()
	// Each player's goroutine waits for its turn, which the pacer gives it (see PerPlayer).
	var turns []chan struct{}
	if cfg.Arrival == PerPlayer {
		turns = make([]chan struct{}, cfg.Calls)
		for i := range turns {
			turns[i] = make(chan struct{})
			players.Go(func() {
				<-turns[i]
				read()
			})
		}
		res.Calls = cfg.Calls
	}
	tick := time.NewTicker(cfg.TickEvery)
	defer tick.Stop()
	start = time.Now()
	bound := start.Add(cfg.Span() + cfg.Timeout + spreadSlack)
	if turns != nil {
		players.Go(func() {
			for i, turn := range turns {
				for time.Since(start) < time.Duration(i)*cfg.Every {
					runtime.Gosched()
				}
				close(turn)
			}
		})
	}
	for {
		if cfg.Arrival == PerTick {
			for range min(cfg.PerTick, cfg.Calls-res.Calls) {
				read()
				res.Calls++
			}
		}
		r.Tick(2 * time.Millisecond)
		if res.Calls == cfg.Calls && delivered+int(refused.Load()) == cfg.Calls {
			break
		}
		if time.Now().After(bound) {
			return res, fmt.Errorf("policybench: %d of %d reads undelivered %v after the first", cfg.Calls-delivered-int(refused.Load()), cfg.Calls, time.Since(start))
		}
		<-tick.C
	}
	res.Failed += int(refused.Load())
	res.BackendCalls = srv.Calls() - calls0
	res.Coalesced = r.Stats().Methods[echo.Path()].Coalesced - stats0.Coalesced
	return res, nil
}
