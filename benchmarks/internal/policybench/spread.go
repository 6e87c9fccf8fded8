package policybench

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
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
	// failed with that code, Shed those a lane did not send because they could no longer
	// finish in time (calls.ErrShed: prpc's answer to a backend slower than the reads'
	// deadlines, as DeadlineExceeded is gRPC's), and Failed those that failed otherwise or
	// that reactor.Go refused.
	Calls, OK, DeadlineExceeded, Shed, Failed int
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
	g, err := startRig(func(addrs []string) reactor.Config {
		return reactor.Config{Target: addrs[0], MaxOutstanding: 2 * cfg.Calls, DefaultTimeout: cfg.Timeout,
			Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Coalesce: cfg.Coalesce}}}
	}, echoAfterDelayMs)
	if err != nil {
		return res, err
	}
	defer func() { err = errors.Join(err, g.close()) }()
	if err := g.warmUp("the warm-up read"); err != nil {
		return res, err
	}
	calls0, stats0 := g.srvs[0].Calls(), g.methodStats()
	s := &spreadRun{cfg: cfg, r: g.r}
	if err := s.run(); err != nil {
		return s.res, err
	}
	res = s.res
	res.Failed += int(s.refused.Load())
	res.BackendCalls = g.srvs[0].Calls() - calls0
	res.Coalesced = g.methodStats().Coalesced - stats0.Coalesced
	return res, nil
}

// spreadRun is the reads of one run of the scenario: what their callbacks have counted, and
// the players' goroutines.
type spreadRun struct {
	cfg       SpreadConfig
	r         *reactor.Reactor
	res       SpreadResult
	delivered int          // the reads delivered, on the host goroutine
	refused   atomic.Int64 // the reads reactor.Go refused, from any goroutine
	start     time.Time    // the first read's turn
	players   sync.WaitGroup
}

// run submits the reads as cfg.Arrival says and ticks the reactor every TickEvery until every
// read is delivered, or fails once the last read is spreadSlack past its deadline. It returns
// once the players' goroutines have ended.
func (s *spreadRun) run() error {
	defer s.players.Wait()
	turns := s.startPlayers()
	tick := time.NewTicker(s.cfg.TickEvery)
	defer tick.Stop()
	s.start = time.Now()
	bound := s.start.Add(s.cfg.Span() + s.cfg.Timeout + spreadSlack)
	if turns != nil {
		s.players.Go(func() { s.pace(turns) })
	}
	for {
		if s.cfg.Arrival == PerTick {
			for range min(s.cfg.PerTick, s.cfg.Calls-s.res.Calls) {
				s.read()
				s.res.Calls++
			}
		}
		s.r.Tick(2 * time.Millisecond)
		undelivered := s.cfg.Calls - s.delivered - int(s.refused.Load())
		if s.res.Calls == s.cfg.Calls && undelivered == 0 {
			return nil
		}
		if time.Now().After(bound) {
			return fmt.Errorf("policybench: %d of %d reads undelivered %v after the first", undelivered, s.cfg.Calls, time.Since(s.start))
		}
		<-tick.C
	}
}

// startPlayers starts, under PerPlayer, a goroutine for each read, which submits it when its
// turn comes, and returns their turns, in order, for pace; under PerTick it returns nil.
func (s *spreadRun) startPlayers() []chan struct{} {
	if s.cfg.Arrival != PerPlayer {
		return nil
	}
	turns := make([]chan struct{}, s.cfg.Calls)
	for i := range turns {
		turns[i] = make(chan struct{})
		s.players.Go(func() {
			<-turns[i]
			s.read()
		})
	}
	s.res.Calls = s.cfg.Calls
	return turns
}

// pace gives each player its turn, the i-th i × Every after the start, yielding rather than
// sleeping until it is due (see PerPlayer).
func (s *spreadRun) pace(turns []chan struct{}) {
	for i, turn := range turns {
		for time.Since(s.start) < time.Duration(i)*s.cfg.Every {
			runtime.Gosched()
		}
		close(turn)
	}
}

// read submits one read of the leaderboard, from any goroutine, and counts it refused if
// reactor.Go refuses it.
func (s *spreadRun) read() {
	req := &testpb.EchoRequest{Message: "leaderboard", DelayMs: s.cfg.Service.Milliseconds()}
	if err := reactor.Go(s.r, echo, req, nil, s.done); err != nil {
		s.refused.Add(1)
	}
}

// done is a read's callback, on the host goroutine, in Tick: it counts the read by its code.
func (s *spreadRun) done(_ *testpb.EchoResponse, err error) {
	s.delivered++
	s.res.LastDelivery = time.Since(s.start)
	switch {
	case err == nil:
		s.res.OK++
	case errors.Is(err, calls.ErrShed):
		s.res.Shed++
	case status.Code(err) == codes.DeadlineExceeded:
		s.res.DeadlineExceeded++
	default:
		s.res.Failed++
	}
}
