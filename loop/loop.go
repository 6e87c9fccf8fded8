package loop

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/reactor"
)

// Reactor is what a Loop drives: any *reactor.Reactor, or a fake in tests. If a Reactor also
// has a method Idle() bool, the Loop drains it when Run stops, ticking it until Idle reports
// true; if it has a method Close(context.Context) error, the Loop then closes it; if it has a
// method CloseStreams(), the Loop calls it as the drain begins, so that open streams end and
// their ends are delivered by the drain's ticks. *reactor.Reactor has all three.
type Reactor interface {
	// Tick runs completed calls' callbacks on the calling goroutine under budget.
	Tick(budget time.Duration) reactor.TickReport
	// Ready returns a channel that receives a value when completions wait for Tick.
	Ready() <-chan struct{}
}

// closer is a Reactor the Loop closes on shutdown.
type closer interface {
	Close(ctx context.Context) error
}

// idler is a Reactor the Loop drains on shutdown, until it is idle.
type idler interface {
	Idle() bool
}

// streamCloser is a Reactor whose open streams the Loop ends as its drain begins: a stream
// never ends by itself, so the drain would otherwise leave it to Close.
type streamCloser interface {
	CloseStreams()
}

var _ closer = (*reactor.Reactor)(nil)
var _ streamCloser = (*reactor.Reactor)(nil)
var _ idler = (*reactor.Reactor)(nil)
var _ Reactor = (*reactor.Reactor)(nil)

// Loop runs a host's ticks at a fixed rate and drives its reactors. Create it with New and
// start it with Run; Stats is safe from any goroutine.
type Loop struct {
	cfg      Config
	period   time.Duration
	started  atomic.Bool
	meter    meter
	draining bool // Run is draining the reactors; Run's goroutine only
}

// New checks cfg and returns a Loop that is not running yet. Errors name the Config field at
// fault and its bounds.
func New(cfg Config) (*Loop, error) {
	cfg, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	l := &Loop{cfg: cfg, period: time.Second / time.Duration(cfg.TPS)}
	l.meter.init()
	return l, nil
}

// Run runs ticks on the calling goroutine until ctx is done, then shuts down. It may be
// called once per Loop; later calls return an error at once.
//
// Tick k is due at start + k·period, where start is when Run began and period is one second
// divided by Config.TPS. Each tick runs OnTick, then Tick(Budget) on each reactor in order.
// Between ticks Run blocks (it never spins) until the next tick is due, ctx is done, or,
// unless Config.TickOnly, a reactor signals Ready: it then drains each reactor that
// signalled with one Tick(Budget) (a wake-up, not a tick) and goes back to waiting. With
// several reactors, one helper goroutine per reactor forwards its Ready signals; they exit
// before Run returns.
//
// A late tick is never caught up. When a tick starts, if the current time is a whole period
// or more past its due time (because the previous tick overran, a wake-up ran long, or the
// process was descheduled), the tick takes the latest due time not after now instead, and
// the due times it passed over are counted as skipped. So after a tick that overruns by 3.5
// periods, the next tick runs at once for the slot 3 periods after the overrunning one, 2
// slots are skipped, and the one after runs on the normal schedule. A tick that ends after
// the next tick's due time counts as an overrun; the next tick then starts at once.
//
// When ctx is done Run finishes the current tick or wake-up, runs OnStop, ends the reactors'
// open streams (CloseStreams: each stream's OnEnd runs with calls.ErrClosed in a tick of the
// drain), and then drains the reactors, as http.Server.Shutdown drains its connections before it closes them: it goes on
// ticking the reactors on the same schedule, with the same Budget and wake-ups, but without
// OnTick, until every reactor that has an Idle method (as *reactor.Reactor does) reports
// idle, or Config.ShutdownTimeout has passed since OnStop returned. Calls that callbacks
// submit meanwhile are admitted and served like any other, so a final save chained from the
// callback of a save in flight is not lost. Then Run closes each reactor that has a Close
// method, in order, with a context that ends ShutdownTimeout after OnStop returned: a reactor
// that went idle closes at once; one that did not cuts off its calls still running with
// calls.ErrClosed, at once, and runs their callbacks on this goroutine. Run returns nil, or
// the errors.Join of the Close errors (a reactor's says how many calls it cut off). A panic in
// OnTick, OnStop or a reactor propagates out of Run, after the helper goroutines have exited;
// the reactors are not closed then. A nil ctx panics with a "prpc:" message before Run does
// anything, so the Loop can still run.
func (l *Loop) Run(ctx context.Context) error {
	if ctx == nil {
		panic("prpc: loop.Run called with a nil context.Context, and refused: pass one that is done when the loop must stop")
	}
	if !l.started.CompareAndSwap(false, true) {
		return errors.New("prpc: loop.Run called more than once on the same Loop")
	}
	w := startWaker(l.cfg.Reactors, l.cfg.TickOnly)
	defer w.stop()
	s := newSchedule(l.cfg.Clock.Now())
	l.run(s, w, ctx.Done(), l.cfg.OnTick, nil)
	if l.cfg.OnStop != nil {
		l.cfg.OnStop()
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.ShutdownTimeout)
	defer cancel()
	l.draining = true
	l.closeStreams()
	l.run(s, w, sctx.Done(), nil, l.idle)
	w.stop()
	// Ready signals the helpers took but the loop did not act on: deliver them as a last
	// wake-up rather than lose them.
	l.drain(w.takeAll(), l.cfg.Budget)
	return l.closeAll(sctx)
}

// schedule is where the ticks of a Run stand: when the first was due, when the next is due,
// and how many have run. The drain at shutdown goes on with the schedule of the ticks before.
type schedule struct {
	start, next time.Time
	n           uint64
}

func newSchedule(start time.Time) *schedule { return &schedule{start: start, next: start} }

// closeStreams ends the open streams of every reactor that has streams, as the drain begins.
func (l *Loop) closeStreams() {
	for _, r := range l.cfg.Reactors {
		if c, ok := r.(streamCloser); ok {
			c.CloseStreams()
		}
	}
}

// idle reports whether every reactor that can tell is idle.
func (l *Loop) idle() bool {
	for _, r := range l.cfg.Reactors {
		if i, ok := r.(idler); ok && !i.Idle() {
			return false
		}
	}
	return true
}

// run is the tick loop proper: it ticks on schedule s, running onTick (if not nil) at the
// start of each tick, until done fires, or until over (if not nil) reports true, which it asks
// before the first tick and after every tick and wake-up.
func (l *Loop) run(s *schedule, w *waker, done <-chan struct{}, onTick func(uint64), over func() bool) {
	clock := l.cfg.Clock
	var timer reactor.Timer
	for {
		if over != nil && over() {
			return
		}
		now := clock.Now()
		if d := s.next.Sub(now); d > 0 {
			// The timer is set only while the loop blocks here, so a set timer means
			// the loop is idle (tests rely on it), and a fired one holds no stale value.
			if timer == nil {
				timer = clock.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			select {
			case <-done:
				timer.Stop()
				return
			case <-timer.C():
			case <-w.c:
				timer.Stop()
				// A wake-up between ticks must not delay the next tick: its drain gets the
				// Budget, or only the time left before the tick is due if that is less.
				if left := s.next.Sub(clock.Now()); left > 0 {
					l.drain(w.take(), min(l.cfg.Budget, left))
				}
			}
			continue
		}
		select {
		case <-done:
			return
		default:
		}
		s.next = l.tick(s.n, s.start, s.next, now, w, onTick)
		s.n++
	}
}

// tick runs tick n, due at due, starting at now, and returns the due time of the next one.
func (l *Loop) tick(n uint64, start, due, now time.Time, w *waker, onTick func(uint64)) time.Time {
	var skipped uint64
	if lag := now.Sub(due); lag >= l.period {
		k := lag / l.period
		skipped = uint64(k)
		due = due.Add(k * l.period)
	}
	if onTick != nil {
		onTick(n)
	}
	clock := l.cfg.Clock
	t := clock.Now()
	var delivery time.Duration
	var delivered uint64
	for i, r := range l.cfg.Reactors {
		w.clear(i) // this Tick covers what any waiting signal announced
		rep := r.Tick(l.cfg.Budget)
		delivered += uint64(rep.Delivered)
		t2 := clock.Now()
		delivery += t2.Sub(t)
		t = t2
	}
	next := due.Add(l.period)
	l.meter.tick(tickSample{
		at:        now.Sub(start),
		dur:       t.Sub(now),
		delivery:  delivery,
		delivered: delivered,
		skipped:   skipped,
		overrun:   t.After(next),
		drain:     l.draining,
	})
	return next
}

// drain runs one Tick(budget) on each reactor listed: a wake-up between ticks, or the final
// delivery after the last tick.
func (l *Loop) drain(reactors []int, budget time.Duration) {
	if len(reactors) == 0 {
		return
	}
	clock := l.cfg.Clock
	t := clock.Now()
	var delivery time.Duration
	var delivered uint64
	for _, i := range reactors {
		rep := l.cfg.Reactors[i].Tick(budget)
		delivered += uint64(rep.Delivered)
		t2 := clock.Now()
		delivery += t2.Sub(t)
		t = t2
	}
	l.meter.wakeup(delivery, delivered, l.draining)
}

// closeAll closes the closable reactors, in order, with ctx, which ends ShutdownTimeout after
// OnStop returned.
func (l *Loop) closeAll(ctx context.Context) error {
	var errs []error
	for i, r := range l.cfg.Reactors {
		c, ok := r.(closer)
		if !ok {
			continue
		}
		if err := c.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("prpc: loop: closing Config.Reactors[%d]: %w", i, err))
		}
	}
	return errors.Join(errs...)
}
