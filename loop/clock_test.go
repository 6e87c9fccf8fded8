package loop_test

import (
	"context"
	"sync"
	"time"

	"github.com/trixnew/prpc/reactor"
)

// manualClock is a reactor.Clock that moves only when Advance is called. Timers fire inside
// Advance, in deadline order. Timers and WaitTimers let a test wait until the loop is blocked
// on its timer before moving time.
//
// It is local to these tests because package reactortest had no manual clock yet when they
// were written; it follows the same API (NewManualClock, Advance, Timers, WaitTimers).
type manualClock struct {
	mu      sync.Mutex
	now     time.Time
	active  map[*manualTimer]bool
	changed chan struct{} // closed and replaced whenever the set of active timers changes
}

var _ reactor.Clock = (*manualClock)(nil)

func newManualClock(start time.Time) *manualClock {
	return &manualClock{now: start, active: make(map[*manualTimer]bool), changed: make(chan struct{})}
}

// Now implements reactor.Clock.
func (c *manualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// NewTimer implements reactor.Clock.
func (c *manualClock) NewTimer(d time.Duration) reactor.Timer {
	t := &manualTimer{c: c, ch: make(chan time.Time, 1)}
	t.Reset(d)
	return t
}

// Advance moves the clock forward by d and fires the timers that are due by then.
func (c *manualClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.active {
		if !t.when.After(c.now) {
			t.ch <- t.when // ch was emptied when t was armed
			c.deactivate(t)
		}
	}
}

// Timers returns the number of timers that are set and have not fired.
func (c *manualClock) Timers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.active)
}

// WaitTimers waits until at least n timers are set, or ctx is done.
func (c *manualClock) WaitTimers(ctx context.Context, n int) error {
	for {
		c.mu.Lock()
		k, changed := len(c.active), c.changed
		c.mu.Unlock()
		if k >= n {
			return nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (c *manualClock) activate(t *manualTimer) {
	if !c.active[t] {
		c.active[t] = true
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

func (c *manualClock) deactivate(t *manualTimer) {
	if c.active[t] {
		delete(c.active, t)
		close(c.changed)
		c.changed = make(chan struct{})
	}
}

type manualTimer struct {
	c    *manualClock
	ch   chan time.Time
	when time.Time
}

func (t *manualTimer) C() <-chan time.Time { return t.ch }

func (t *manualTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.active[t]
	t.drain()
	t.when = c.now.Add(d)
	if d <= 0 {
		t.ch <- t.when
		c.deactivate(t)
	} else {
		c.activate(t)
	}
	return was
}

func (t *manualTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.active[t]
	t.drain()
	c.deactivate(t)
	return was
}

func (t *manualTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}
