package reactortest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/trixnew/prpc/reactor"
)

// start is an arbitrary fixed time, with no monotonic reading, so that failures print
// readable times.
var start = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

// received returns the value waiting on t's channel, if any, without blocking. The clock
// sends while holding its lock, before Advance, NewTimer or Reset returns, so a value is
// either there when they return or not at all.
func received(t reactor.Timer) (time.Time, bool) {
	select {
	case v := <-t.C():
		return v, true
	default:
		return time.Time{}, false
	}
}

func requireFired(t *testing.T, tm reactor.Timer, want time.Time) {
	t.Helper()
	got, ok := received(tm)
	require.True(t, ok, "timer did not fire")
	require.True(t, want.Equal(got), "timer fired with %v, want %v", got, want)
	_, again := received(tm)
	require.False(t, again, "timer fired twice")
}

func requireSilent(t *testing.T, tm reactor.Timer) {
	t.Helper()
	v, ok := received(tm)
	require.False(t, ok, "timer fired unexpectedly with %v", v)
}

func requirePanicPrefix(t *testing.T, prefix string, f func()) {
	t.Helper()
	defer func() {
		t.Helper()
		p := recover()
		require.NotNil(t, p, "did not panic")
		s, ok := p.(string)
		require.True(t, ok, "panic value %T, want string", p)
		require.True(t, strings.HasPrefix(s, prefix), "panic %q lacks prefix %q", s, prefix)
	}()
	f()
}

func TestManualClockTime(t *testing.T) {
	c := NewManualClock(start)
	require.True(t, start.Equal(c.Now()))
	c.Advance(0)
	require.True(t, start.Equal(c.Now()))
	c.Advance(1500 * time.Millisecond)
	require.True(t, start.Add(1500*time.Millisecond).Equal(c.Now()))
	c.Set(start.Add(time.Hour))
	require.True(t, start.Add(time.Hour).Equal(c.Now()))
	c.Set(c.Now()) // setting the current time is allowed
	require.True(t, start.Add(time.Hour).Equal(c.Now()))

	requirePanicPrefix(t, "reactortest: ManualClock.Advance", func() { c.Advance(-time.Nanosecond) })
	requirePanicPrefix(t, "reactortest: ManualClock.Set", func() { c.Set(start) })
	require.True(t, start.Add(time.Hour).Equal(c.Now()), "a refused move changed the time")
}

func TestManualClockTimer(t *testing.T) {
	const d = 10 * time.Second
	tests := []struct {
		name string
		run  func(t *testing.T, c *ManualClock)
	}{
		{"fires at its deadline, not before", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			require.Equal(t, 1, c.Timers())
			c.Advance(d - time.Nanosecond)
			requireSilent(t, tm)
			require.Equal(t, 1, c.Timers())
			c.Advance(time.Nanosecond)
			requireFired(t, tm, start.Add(d))
			require.Equal(t, 0, c.Timers())
		}},
		{"fires once", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			c.Advance(d)
			requireFired(t, tm, start.Add(d))
			c.Advance(100 * d)
			requireSilent(t, tm)
		}},
		{"a late Advance sends the deadline, not the new time", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			c.Set(start.Add(3 * d))
			requireFired(t, tm, start.Add(d))
		}},
		{"zero or negative duration fires at once", func(t *testing.T, c *ManualClock) {
			zero, neg := c.NewTimer(0), c.NewTimer(-d)
			requireFired(t, zero, start)
			requireFired(t, neg, start)
			require.Equal(t, 0, c.Timers())
		}},
		{"Stop before firing: true, never fires", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			require.True(t, tm.Stop())
			require.Equal(t, 0, c.Timers())
			c.Advance(2 * d)
			requireSilent(t, tm)
			require.False(t, tm.Stop(), "second Stop")
		}},
		{"Stop after firing, value not received: true, no stale value", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			c.Advance(d)
			require.True(t, tm.Stop())
			requireSilent(t, tm)
		}},
		{"Stop after the value was received: false", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			c.Advance(d)
			requireFired(t, tm, start.Add(d))
			require.False(t, tm.Stop())
		}},
		{"Reset of an active timer: true, deadline from now", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			c.Advance(d / 2)
			require.True(t, tm.Reset(d))
			require.Equal(t, 1, c.Timers())
			c.Advance(d/2 + d/4)
			requireSilent(t, tm)
			c.Advance(d / 4)
			requireFired(t, tm, start.Add(d/2+d))
		}},
		{"Reset after firing, value not received: true, no stale value", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			c.Advance(d)
			require.True(t, tm.Reset(d))
			requireSilent(t, tm)
			c.Advance(d)
			requireFired(t, tm, start.Add(2*d))
		}},
		{"Reset of a stopped timer: false, fires again", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			tm.Stop()
			require.False(t, tm.Reset(d))
			c.Advance(d)
			requireFired(t, tm, start.Add(d))
		}},
		{"Reset to zero fires at once with the current time", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(d)
			c.Advance(d / 2)
			require.True(t, tm.Reset(0))
			requireFired(t, tm, start.Add(d/2))
			require.Equal(t, 0, c.Timers())
			c.Advance(d)
			requireSilent(t, tm)
		}},
		{"Timers counts only active timers", func(t *testing.T, c *ManualClock) {
			a, b, _ := c.NewTimer(d), c.NewTimer(2*d), c.NewTimer(3*d)
			require.Equal(t, 3, c.Timers())
			a.Stop()
			require.Equal(t, 2, c.Timers())
			c.Advance(2 * d)
			require.Equal(t, 1, c.Timers())
			b.Reset(d)
			require.Equal(t, 2, c.Timers())
			c.Advance(d)
			require.Equal(t, 0, c.Timers())
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, NewManualClock(start)) })
	}
}

// TestManualClockFiresInDeadlineOrder checks the order in which Advance fires timers, which
// no receiver can observe through the channels alone.
func TestManualClockFiresInDeadlineOrder(t *testing.T) {
	c := NewManualClock(start)
	mk := func(d time.Duration) *manualTimer { return c.NewTimer(d).(*manualTimer) }
	t3, t1, t2, t1b, late := mk(3*time.Second), mk(time.Second), mk(2*time.Second), mk(time.Second), mk(time.Minute)
	t2.Reset(2 * time.Second) // re-armed: now after every other timer in arming order

	c.mu.Lock()
	due := c.dueLocked(start.Add(3 * time.Second))
	c.mu.Unlock()
	require.Equal(t, []*manualTimer{t1, t1b, t2, t3}, due)

	c.Advance(3 * time.Second)
	for _, tm := range []*manualTimer{t1, t1b, t2, t3} {
		requireFired(t, tm, tm.when)
	}
	requireSilent(t, late)
	require.Equal(t, 1, c.Timers())
}

// TestSendKeepsNewest checks the delivery rule: a channel that still holds a value gets the
// newer one instead, and the sender never blocks.
func TestSendKeepsNewest(t *testing.T) {
	ch := make(chan time.Time, 1)
	send(ch, start)
	send(ch, start.Add(time.Second))
	require.Len(t, ch, 1)
	require.True(t, start.Add(time.Second).Equal(<-ch))
	require.False(t, drain(ch))
}

// TestManualClockNotifiesEveryChange checks that each change to the set of active timers
// wakes WaitTimers, by watching the channel it waits on.
func TestManualClockNotifiesEveryChange(t *testing.T) {
	active := func(c *ManualClock) reactor.Timer { return c.NewTimer(time.Second) }
	stopped := func(c *ManualClock) reactor.Timer { tm := c.NewTimer(time.Second); tm.Stop(); return tm }
	tests := []struct {
		name  string
		setup func(c *ManualClock) reactor.Timer
		op    func(c *ManualClock, tm reactor.Timer)
	}{
		{"NewTimer", stopped, func(c *ManualClock, _ reactor.Timer) { c.NewTimer(time.Second) }},
		{"Reset of an active timer", active, func(_ *ManualClock, tm reactor.Timer) { tm.Reset(time.Minute) }},
		{"Reset of a stopped timer", stopped, func(_ *ManualClock, tm reactor.Timer) { tm.Reset(time.Minute) }},
		{"Stop", active, func(_ *ManualClock, tm reactor.Timer) { tm.Stop() }},
		{"Advance that fires", active, func(c *ManualClock, _ reactor.Timer) { c.Advance(time.Second) }},
		{"Set that fires", active, func(c *ManualClock, _ reactor.Timer) { c.Set(start.Add(time.Second)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := NewManualClock(start)
			tm := tc.setup(c)
			c.mu.Lock()
			changed := c.changed
			c.mu.Unlock()
			tc.op(c, tm)
			select {
			case <-changed:
			default:
				t.Fatal("WaitTimers was not woken")
			}
		})
	}
}

func TestManualClockWaitTimers(t *testing.T) {
	defer goleak.VerifyNone(t)
	// Bounds: each wait below ends as soon as another goroutine acts;
	// the 10 s contexts only stop a broken WaitTimers from hanging the test.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	t.Run("already satisfied", func(t *testing.T) {
		c := NewManualClock(start)
		require.NoError(t, c.WaitTimers(ctx, 0))
		require.NoError(t, c.WaitTimers(ctx, -1))
		c.NewTimer(time.Second)
		require.NoError(t, c.WaitTimers(ctx, 1))
	})

	t.Run("wakes on NewTimer and Reset", func(t *testing.T) {
		c := NewManualClock(start)
		stopped := c.NewTimer(time.Second)
		stopped.Stop()
		done := make(chan error, 1)
		go func() { done <- c.WaitTimers(ctx, 2) }()
		c.NewTimer(time.Second)
		select {
		case err := <-done:
			t.Fatalf("WaitTimers(2) returned %v with one timer active", err)
		default:
		}
		stopped.Reset(time.Second)
		require.NoError(t, <-done)
	})

	t.Run("does not return while too few are active", func(t *testing.T) {
		c := NewManualClock(start)
		short, cancelShort := context.WithCancel(ctx)
		done := make(chan error, 1)
		tm := c.NewTimer(time.Second)
		go func() { done <- c.WaitTimers(short, 2) }()
		for range 100 { // each change wakes the waiter, which must go back to waiting
			tm.Reset(time.Second)
			c.Advance(time.Second) // fires tm
			tm.Reset(time.Second)
		}
		cancelShort()
		err := <-done
		require.ErrorIs(t, err, context.Canceled)
		require.Contains(t, err.Error(), "1 of 2 timers active")
	})

	t.Run("context deadline", func(t *testing.T) {
		c := NewManualClock(start)
		short, cancelShort := context.WithTimeout(ctx, time.Millisecond)
		defer cancelShort()
		err := c.WaitTimers(short, 1)
		require.True(t, errors.Is(err, context.DeadlineExceeded), "got %v", err)
	})
}

// TestManualClockConcurrent runs every method from several goroutines while time moves, and
// checks the Go 1.23 guarantee under concurrency: once Stop or Reset has returned, no value
// from before it is received. Run it with -race.
func TestManualClockConcurrent(t *testing.T) {
	defer goleak.VerifyNone(t)
	c := NewManualClock(start)
	const workers, rounds = 4, 500
	stop := make(chan struct{})
	var advancer sync.WaitGroup
	advancer.Add(1)
	go func() {
		defer advancer.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			c.Advance(time.Microsecond) // an hour would take 3.6e9 rounds: far more than run
			_ = c.Timers()
		}
	}()
	errs := make(chan string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				tm := c.NewTimer(time.Duration(i%5) * time.Millisecond)
				if i%2 == 0 {
					tm.Stop()
					if v, ok := received(tm); ok {
						errs <- fmt.Sprintf("worker %d: stale value %v after Stop", w, v)
						return
					}
					continue
				}
				tm.Reset(time.Hour) // cannot come due while the test runs (see the advancer)
				if v, ok := received(tm); ok {
					errs <- fmt.Sprintf("worker %d: stale value %v after Reset", w, v)
					return
				}
				tm.Stop()
				_ = c.Now()
			}
		}()
	}
	wg.Wait()
	close(stop)
	advancer.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
	require.Equal(t, 0, c.Timers(), "every timer was stopped or fired")
}

func TestManualClockWaitTimerBy(t *testing.T) {
	defer goleak.VerifyNone(t)
	// Bounds: each wait below that should return ends as soon as another goroutine acts; the
	// 10 s context only stops a broken WaitTimerBy from hanging the test. Waits that should
	// not return are ended by cancelling their own context.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const d = 10 * time.Second

	// waiting starts WaitTimerBy(by) on another goroutine, with a context the returned cancel
	// ends; done receives its result.
	waiting := func(c *ManualClock, by time.Time) (done chan error, cancel func()) {
		wctx, cancel := context.WithCancel(ctx)
		done = make(chan error, 1)
		go func() { done <- c.WaitTimerBy(wctx, by) }()
		return done, cancel
	}
	// requireWaiting checks that the waiter has not returned, after making a change that
	// wakes it (a timer set and stopped): a waiter that returns too early is caught if it has
	// run by then, which it usually has.
	requireWaiting := func(t *testing.T, c *ManualClock, done chan error) {
		t.Helper()
		other := c.NewTimer(time.Hour)
		other.Stop()
		select {
		case err := <-done:
			t.Fatalf("WaitTimerBy returned %v", err)
		default:
		}
	}

	tests := []struct {
		name string
		run  func(t *testing.T, c *ManualClock)
	}{
		{"a timer due at or before t satisfies it at once", func(t *testing.T, c *ManualClock) {
			c.NewTimer(3 * d)
			c.NewTimer(d)
			require.NoError(t, c.WaitTimerBy(ctx, start.Add(d)))
			require.NoError(t, c.WaitTimerBy(ctx, start.Add(2*d)))
		}},
		{"a timer due after t does not", func(t *testing.T, c *ManualClock) {
			c.NewTimer(2 * d)
			short, cancelShort := context.WithCancel(ctx)
			cancelShort()
			err := c.WaitTimerBy(short, start.Add(d))
			require.ErrorIs(t, err, context.Canceled)
			require.Contains(t, err.Error(), "no timer due by then (1 active, the earliest due "+start.Add(2*d).String()+")")
		}},
		{"wakes when a timer is moved earlier, which WaitTimers(1) cannot see", func(t *testing.T, c *ManualClock) {
			tm := c.NewTimer(2 * d)
			require.NoError(t, c.WaitTimers(ctx, 1), "one timer is active throughout")
			done, cancelWait := waiting(c, start.Add(d))
			defer cancelWait()
			requireWaiting(t, c, done)
			tm.Reset(d)
			require.NoError(t, <-done)
		}},
		{"wakes when a timer is set", func(t *testing.T, c *ManualClock) {
			done, cancelWait := waiting(c, start.Add(d))
			defer cancelWait()
			requireWaiting(t, c, done)
			c.NewTimer(d / 2)
			require.NoError(t, <-done)
		}},
		{"a fired timer does not count", func(t *testing.T, c *ManualClock) {
			c.NewTimer(d)
			c.Advance(d)
			short, cancelShort := context.WithCancel(ctx)
			cancelShort()
			err := c.WaitTimerBy(short, start.Add(2*d))
			require.ErrorIs(t, err, context.Canceled)
			require.Contains(t, err.Error(), "no timer due by then (none active)")
		}},
		{"t not after Now fails at once", func(t *testing.T, c *ManualClock) {
			c.Advance(d)
			for _, by := range []time.Time{start, start.Add(d)} {
				err := c.WaitTimerBy(ctx, by)
				require.Error(t, err)
				require.NotErrorIs(t, err, context.DeadlineExceeded)
				require.Contains(t, err.Error(), "not after Now")
			}
		}},
		{"fails once time passes t while it waits", func(t *testing.T, c *ManualClock) {
			done, cancelWait := waiting(c, start.Add(d))
			defer cancelWait()
			requireWaiting(t, c, done)
			c.Advance(d)
			err := <-done
			require.Error(t, err)
			require.Contains(t, err.Error(), "not after Now")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, NewManualClock(start)) })
	}
}

// TestManualClockWaitNilContextPanics checks that WaitTimers and WaitTimerBy given a nil
// context panic with a message that names the method, even when they would not have to wait.
func TestManualClockWaitNilContextPanics(t *testing.T) {
	var noCtx context.Context // nil, in a variable: staticcheck rejects a nil literal
	cases := []struct {
		name string
		wait func(c *ManualClock) error
	}{
		{"WaitTimers", func(c *ManualClock) error { return c.WaitTimers(noCtx, 0) }},
		{"WaitTimerBy", func(c *ManualClock) error { return c.WaitTimerBy(noCtx, start.Add(2*time.Second)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := NewManualClock(start)
			c.NewTimer(time.Second) // due by the time WaitTimerBy asks for: neither would wait
			require.PanicsWithValue(t, "reactortest: ManualClock."+tc.name+" with a nil context.Context",
				func() { _ = tc.wait(c) })
		})
	}
}
