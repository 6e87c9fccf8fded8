package reactortest

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/trixnew/prpc/reactor"
)

// ManualClock is a reactor.Clock whose time moves only when Advance or Set is called. Pass it
// as reactor.Config.Clock to test deadlines and Tick budgets without waiting and without
// flakiness: a call with a 2 s timeout fails with ErrTimeout as soon as the test advances the
// clock by 2 s, and a callback that advances the clock spends exactly that much of a Tick's
// budget.
//
// Its timers have the semantics of *time.Timer since Go 1.23, except that the channel has a
// capacity of one: a timer fires by sending the time on its channel without blocking, and
// after Stop or Reset returns no stale value is received from it. A timer set with a
// duration ≤ 0 fires at once, inside NewTimer or Reset, as a time.Timer would.
//
// A reactor keeps at most one timer active on its clock, never one per call: it is set for
// the earliest deadline of the reactor's calls, or for the time the next attempt of a hedged
// call is due (reactor.HedgePolicy) if that comes first, or for an earlier time (a timer left
// set for a call that has since completed is not moved later). The reactor sets it on its own
// goroutine, so a test that times calls out waits until that one timer is due by their
// deadline before it advances the clock (a test of hedging, by the hedge's time):
//
//  1. Make sure the reactor has taken the calls: their Backend handlers have started, or
//     reactor.Stats counts them as Queued or InFlight.
//  2. Call WaitTimerBy(ctx, d), with d the earliest of their deadlines: the clock's time when
//     Call ran, plus the call's timeout.
//  3. Advance the clock to d or past it, then Tick (or Flush, if every other call settles by
//     itself): every call whose deadline has passed fails with calls.ErrTimeout.
//
// For later deadlines, repeat steps 2 and 3: the reactor sets its timer again after each
// Advance. Each step waits for what the next one relies on, so, while no other goroutine
// makes calls or moves the clock, the sequence cannot hang. Step 1
// matters only when a timer is already active before the calls (one left by an earlier call):
// that timer may satisfy step 2 before the reactor has seen the calls, and a reactor that
// moves its timer while the clock is advanced sets it from a time read before the Advance.
// WaitTimers(ctx, 1) serves for step 2 when no timer was active before the calls: on a new
// reactor, or once the reactor's timer has fired or stopped with no call pending. Timers of
// other users of the clock (a second reactor, a loop.Loop) count too: give each reactor under
// test a clock of its own.
//
// A Backend handler's context, a unary call's or a stream's, keeps its call's deadline on the
// clock, as a server's does on the server's: Advance and Set end it, with context.DeadlineExceeded, as soon as they reach
// that deadline, before they fire any timer. Its Deadline method reports that deadline on the
// system clock, as the code the handler passes the context to reads it: the system clock's
// time when the handler started plus the time the call had left on this clock then, so a
// clock started at any fixed date serves; it does not move when this clock does. It is not a
// timer: Timers, WaitTimers and WaitTimerBy do not count it, so the reactor's one timer stays
// the one they see.
//
// Time never goes backwards: Advance with a negative duration and Set with an earlier time
// panic. The zero value is not usable; make one with NewManualClock. All methods are safe for
// concurrent use.
type ManualClock struct {
	mu      sync.Mutex
	now     time.Time
	active  []*manualTimer // active timers, in no particular order; each knows its index
	seq     uint64         // arming order, to fire timers with equal deadlines in that order
	changed chan struct{}  // closed and replaced whenever the active timers change or time moves

	expiring map[*clockContext]struct{} // contexts of Backend handlers, ended at their deadline; not timers
}

var _ reactor.Clock = (*ManualClock)(nil)

// NewManualClock returns a ManualClock that reads start until it is advanced.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start, changed: make(chan struct{})}
}

// Now returns the clock's current time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer returns a timer that fires once the clock has been advanced by d or more, or at
// once if d ≤ 0. It implements reactor.Clock.
func (c *ManualClock) NewTimer(d time.Duration) reactor.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &manualTimer{clock: c, ch: make(chan time.Time, 1), index: -1}
	c.armLocked(t, d)
	return t
}

// Advance moves the clock forward by d, ends the context of every Backend handler whose
// call's deadline is at or before the new time (see ManualClock), then fires, in deadline
// order (timers with equal deadlines in the order they were armed), every timer whose
// deadline is at or before the new time. Each fired timer receives its own deadline on its channel, without blocking
// Advance. Advance(0) fires nothing new; a negative d panics.
func (c *ManualClock) Advance(d time.Duration) {
	if d < 0 {
		panic(fmt.Sprintf("reactortest: ManualClock.Advance(%v): time cannot go backwards", d))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.advanceLocked(c.now.Add(d))
}

// Set moves the clock to t, firing timers as Advance does. A t before Now panics.
func (c *ManualClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.Before(c.now) {
		panic(fmt.Sprintf("reactortest: ManualClock.Set(%v) is before Now, %v: time cannot go backwards", t, c.now))
	}
	c.advanceLocked(t)
}

// Timers returns the number of active timers: set, and neither fired nor stopped since.
func (c *ManualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.active)
}

// WaitTimers waits until at least n timers are active and returns nil, or until ctx is done
// and returns an error that wraps ctx.Err(). It wakes on every change to the set of active
// timers, without polling. An n ≤ 0 returns nil at once.
//
// A reactor has at most one timer active, however many calls it has (see ManualClock), so
// WaitTimers(ctx, 1) is the wait for a reactor's timer; a larger n waits for other
// users of the clock, or until ctx is done. WaitTimerBy also checks when the timer is due.
// A nil ctx panics.
func (c *ManualClock) WaitTimers(ctx context.Context, n int) error {
	if ctx == nil {
		panic("reactortest: ManualClock.WaitTimers with a nil context.Context")
	}
	for {
		c.mu.Lock()
		active, changed := len(c.active), c.changed
		c.mu.Unlock()
		if active >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return fmt.Errorf("reactortest: ManualClock.WaitTimers: %d of %d timers active: %w", active, n, ctx.Err())
		}
	}
}

// WaitTimerBy waits until a timer is active that is due at or before t and returns nil, for
// example until a reactor has set its timer for a call's deadline t. It returns an error at
// once if t is not after Now, when every timer due by t has fired already; and it returns an
// error that wraps ctx.Err(), and says when the active timers are due, if ctx is done first.
// It wakes whenever a timer is set, moved, stopped or fired and whenever time moves, without
// polling. Unlike WaitTimers, it is not satisfied by a timer due after t, nor fooled by a
// timer moved earlier, which stays one active timer. See ManualClock for its use. A nil ctx
// panics.
func (c *ManualClock) WaitTimerBy(ctx context.Context, t time.Time) error {
	if ctx == nil {
		panic("reactortest: ManualClock.WaitTimerBy with a nil context.Context")
	}
	for {
		c.mu.Lock()
		now, changed := c.now, c.changed
		earliest, active := c.earliestLocked()
		c.mu.Unlock()
		switch {
		case active > 0 && !earliest.After(t):
			return nil
		case !t.After(now):
			return fmt.Errorf("reactortest: ManualClock.WaitTimerBy(%v): not after Now, %v: every timer due by then has fired", t, now)
		}
		select {
		case <-changed:
		case <-ctx.Done():
			due := "none active"
			if active > 0 {
				due = fmt.Sprintf("%d active, the earliest due %v", active, earliest)
			}
			return fmt.Errorf("reactortest: ManualClock.WaitTimerBy(%v): no timer due by then (%s): %w", t, due, ctx.Err())
		}
	}
}

// earliestLocked returns the deadline of the earliest active timer and the number of active
// timers.
func (c *ManualClock) earliestLocked() (time.Time, int) {
	var earliest time.Time
	for i, t := range c.active {
		if i == 0 || t.when.Before(earliest) {
			earliest = t.when
		}
	}
	return earliest, len(c.active)
}

// advanceLocked moves the clock to target, ends the Backend handler contexts and fires the
// timers due by then, and wakes the waiters if time moved.
func (c *ManualClock) advanceLocked(target time.Time) {
	c.expireLocked(target) // first: a handler sees its deadline pass before the reactor can act on it
	for _, t := range c.dueLocked(target) {
		c.removeLocked(t)
		send(t.ch, t.when)
	}
	if target.After(c.now) {
		c.notifyLocked()
	}
	c.now = target
}

// dueLocked returns the active timers due at or before target, in the order they fire.
func (c *ManualClock) dueLocked(target time.Time) []*manualTimer {
	var due []*manualTimer
	for _, t := range c.active {
		if !t.when.After(target) {
			due = append(due, t)
		}
	}
	slices.SortFunc(due, func(a, b *manualTimer) int {
		if r := a.when.Compare(b.when); r != 0 {
			return r
		}
		return cmp.Compare(a.seq, b.seq)
	})
	return due
}

// armLocked sets t to fire d from now, firing it at once if d ≤ 0.
func (c *ManualClock) armLocked(t *manualTimer, d time.Duration) {
	t.when = c.now.Add(d)
	if d <= 0 {
		send(t.ch, c.now)
		return
	}
	c.seq++
	t.seq = c.seq
	t.index = len(c.active)
	c.active = append(c.active, t)
	c.notifyLocked()
}

// removeLocked deactivates t if it is active, and reports whether it was.
func (c *ManualClock) removeLocked(t *manualTimer) bool {
	i := t.index
	if i < 0 {
		return false
	}
	last := len(c.active) - 1
	c.active[i] = c.active[last]
	c.active[i].index = i
	c.active[last] = nil
	c.active = c.active[:last]
	t.index = -1
	c.notifyLocked()
	return true
}

// notifyLocked wakes every WaitTimers and WaitTimerBy.
func (c *ManualClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// send puts v on ch, a channel of capacity one that only the clock sends on, without
// blocking: a value still there is dropped in favour of v.
func send(ch chan time.Time, v time.Time) {
	for {
		select {
		case ch <- v:
			return
		default:
		}
		select {
		case <-ch:
		default:
		}
	}
}

// drain empties ch and reports whether it held a value.
func drain(ch chan time.Time) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// manualTimer is a timer of a ManualClock. Its fields are guarded by the clock's mutex, and
// the clock sends on ch only while holding it, so Stop and Reset, which drain ch under the
// mutex, leave no stale value behind.
type manualTimer struct {
	clock *ManualClock
	ch    chan time.Time
	when  time.Time
	seq   uint64
	index int // in clock.active; -1 when not active
}

// C returns the channel the timer fires on.
func (t *manualTimer) C() <-chan time.Time { return t.ch }

// Stop stops the timer and empties its channel. As with a *time.Timer since Go 1.23, it
// reports true if the timer was active or had fired without its value being received.
func (t *manualTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	wasActive := c.removeLocked(t)
	return drain(t.ch) || wasActive
}

// Reset empties the timer's channel and sets it to fire d from the clock's current time (at
// once if d ≤ 0). It reports what Stop would have reported.
func (t *manualTimer) Reset(d time.Duration) bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	wasActive := c.removeLocked(t)
	pending := drain(t.ch) || wasActive
	c.armLocked(t, d)
	return pending
}
