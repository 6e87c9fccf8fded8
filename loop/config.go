package loop

import (
	"fmt"
	"reflect"
	"time"

	"github.com/trixnew/prpc/reactor"
)

// Defaults and bounds of Config.
const (
	DefaultTPS             = 20
	MaxTPS                 = 1000
	DefaultBudget          = 2 * time.Millisecond
	MaxBudget              = time.Second
	DefaultShutdownTimeout = 5 * time.Second
	MaxShutdownTimeout     = time.Hour
)

// Config configures a Loop. The zero value of each field means its documented default; New
// rejects values outside the documented bounds with an error naming the field.
type Config struct {
	// TPS is the number of ticks per second. Tick k is due at k/TPS seconds after Run
	// starts (the period is one second divided by TPS, truncated to a nanosecond). Default
	// 20, from 1 to 1000.
	TPS int

	// Budget is the time budget passed to each reactor's Tick, per reactor and per delivery:
	// once per reactor in every tick, and once per Ready wake-up of that reactor between
	// ticks, which gets less if less time is left before the next tick, so that it never
	// delays one. A reactor always delivers at least one waiting call, so a Tick may exceed
	// its budget by one callback. Default 2 ms; more than 0 and at most 1 s.
	Budget time.Duration

	// Reactors are the reactors the Loop ticks, in this order. It may be empty (the Loop
	// then only runs OnTick); entries must be non-nil and distinct. Any *reactor.Reactor
	// fits. The Loop owns their Tick and Close from Run on: nothing else may call them while
	// Run runs.
	Reactors []Reactor

	// OnTick, if set, is the host's game logic. It runs on the Run goroutine at the start of
	// every tick, before the reactors' Tick, with tick = the number of ticks run before this
	// one (0, 1, 2, …; skipped ticks take no number). Its duration counts in the tick's.
	OnTick func(tick uint64)

	// OnStop, if set, runs once on the Run goroutine when the context passed to Run is
	// done, after the last tick, so game code can submit its last calls (final saves). The
	// Loop then drains the reactors: it goes on ticking them, without OnTick, until each is
	// idle, so that those calls, and the calls their callbacks chain, are served and their
	// callbacks run; only then does it close them (see Run).
	OnStop func()

	// ShutdownTimeout bounds the shutdown after OnStop returns: the drain, then the closing
	// of all the reactors together, with one context that ends ShutdownTimeout after OnStop
	// returns, measured by package time, not by Clock. If the reactors are not idle by then,
	// the drain ends and closing cuts off the calls still running with calls.ErrClosed, so a
	// host whose callbacks chain calls forever cannot hold shutdown longer. Default 5 s; more
	// than 0 and at most 1 h.
	ShutdownTimeout time.Duration

	// TickOnly makes delivery strictly tick-only: the Loop does not wait on the reactors'
	// Ready channels, so callbacks run only inside ticks, at most one period after their
	// call completes. Default false: a reactor that signals Ready between ticks is drained
	// at once.
	TickOnly bool

	// Clock is the time source for the schedule, the tick timer and Stats' durations.
	// Default reactor.SystemClock(); tests pass a manual clock.
	Clock reactor.Clock
}

func fieldError(field string, value any, bounds string) error {
	return fmt.Errorf("prpc: loop.Config.%s is %v; %s", field, value, bounds)
}

// resolve checks c and returns it with every default filled in.
func (c Config) resolve() (Config, error) {
	if c.TPS < 0 || c.TPS > MaxTPS {
		return c, fieldError("TPS", c.TPS, fmt.Sprintf("must be between 1 and %d (0 means the default, %d)", MaxTPS, DefaultTPS))
	}
	if c.TPS == 0 {
		c.TPS = DefaultTPS
	}
	durations := []struct {
		name       string
		p          *time.Duration
		max, deflt time.Duration
	}{
		{"Budget", &c.Budget, MaxBudget, DefaultBudget},
		{"ShutdownTimeout", &c.ShutdownTimeout, MaxShutdownTimeout, DefaultShutdownTimeout},
	}
	for _, f := range durations {
		if *f.p < 0 || *f.p > f.max {
			return c, fieldError(f.name, *f.p, fmt.Sprintf("must be more than 0 and at most %v (0 means the default, %v)", f.max, f.deflt))
		}
		if *f.p == 0 {
			*f.p = f.deflt
		}
	}
	for i, r := range c.Reactors {
		if isNil(r) {
			return c, fieldError(fmt.Sprintf("Reactors[%d]", i), "nil", "every reactor must be non-nil")
		}
		if !reflect.TypeOf(r).Comparable() {
			continue
		}
		for j, earlier := range c.Reactors[:i] {
			if reflect.TypeOf(earlier) == reflect.TypeOf(r) && earlier == r {
				return c, fieldError(fmt.Sprintf("Reactors[%d]", i), "a duplicate", fmt.Sprintf("it is Reactors[%d] again; list each reactor once", j))
			}
		}
	}
	c.Reactors = append([]Reactor(nil), c.Reactors...)
	if c.Clock == nil {
		c.Clock = reactor.SystemClock()
	}
	return c, nil
}

// isNil reports whether r is nil or holds a nil pointer, map, channel, func or slice, such as
// the *reactor.Reactor of a failed reactor.New.
func isNil(r Reactor) bool {
	if r == nil {
		return true
	}
	switch v := reflect.ValueOf(r); v.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Chan, reflect.Func, reflect.Slice, reflect.Interface:
		return v.IsNil()
	}
	return false
}
