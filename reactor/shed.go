package reactor

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
)

// Shedding (calls.ErrShed). A lane that is free to send a call first asks whether the call can
// still finish in time: if the time left before its deadline is less than the shortest
// transport time of its method's recent successful calls (transportFloor), it would reach the
// backend too late to be answered, and, under load, would use the backend's capacity for
// nothing, above all a backend that serves calls whose clients gave up. The lane fails it at
// once instead, with ErrShed, never sent, and takes the next call. The shortest recent time,
// not a median or a percentile: a call is shed only when the backend has answered no recent
// call that fast, so that a call that could still succeed is sent; and it costs the lanes an
// atomic load per success and per call they take, no sort and no lock.

// shedWindow is the span of each of transportFloor's two windows, on the reactor's clock: a
// method's floor reflects its successes of the last one to two windows. After two windows
// without a success the method has no floor and sheds nothing, so that a floor learnt from a
// slow backend cannot keep shedding a method's calls once it has recovered: the calls are
// sent, and their successes teach the floor again.
const shedWindow = int64(time.Second)

// transportFloor is what a method's recent successful calls say its calls need: the shortest
// transport time of its successful calls in the current window and in the one before,
// measured on the lanes from the claim (or an attempt's start) to the answer. Lanes record
// and read it without a lock; a sample racing a window's turn may be lost, which only makes
// the floor higher than the true minimum for the rest of that window, or lower.
type transportFloor struct {
	start atomic.Int64 // when the current window began; 0 before the first sample
	cur   atomic.Int64 // the shortest transport time in the current window, ns; 0 for none
	prev  atomic.Int64 // the same in the window before; 0 for none
}

// sample records d, the transport time of a successful call of the method that returned at
// now.
func (f *transportFloor) sample(now int64, d time.Duration) {
	ns := max(int64(d), 1)
	if s := f.start.Load(); now-s >= shedWindow || s == 0 {
		if f.start.CompareAndSwap(s, now) {
			prev := f.cur.Load()
			if now-s >= 2*shedWindow || s == 0 {
				prev = 0 // the window before the new one had no success
			}
			f.prev.Store(prev)
			f.cur.Store(ns)
			return
		}
	}
	for {
		c := f.cur.Load()
		if c != 0 && c <= ns || f.cur.CompareAndSwap(c, ns) {
			return
		}
	}
}

// need returns the transport time a call of the method needs at now, the shortest of its
// successes in the last one to two windows, or 0 if it has had none.
func (f *transportFloor) need(now int64) time.Duration {
	s := f.start.Load()
	switch age := now - s; {
	case s == 0 || age >= 2*shedWindow:
		return 0
	case age >= shedWindow:
		return time.Duration(f.cur.Load()) // the current window ended: it is the one before
	}
	c, p := f.cur.Load(), f.prev.Load()
	if p != 0 && p < c {
		c = p
	}
	return time.Duration(c)
}

// shedError returns the error to shed c with, a call of method m the lane has claimed at now,
// if the time left before c's deadline is less than m needs; nil if c can still finish in
// time, or if its deadline has passed already: it then fails with ErrTimeout, as ever, since
// ErrShed says that the deadline had not passed.
func shedError(c *callcore.Call, m *methodEntry, now int64) error {
	left := time.Duration(c.Deadline - now)
	need := m.floor.need(now)
	if left >= need || left <= 0 {
		return nil
	}
	return markNotSent(localError(callerr.Shed, c.Ops.Path,
		fmt.Sprintf("not sent: %v left before its deadline, and the method's recent calls took at least %v", left.Round(time.Microsecond), need.Round(time.Microsecond)), nil))
}

// methodOf returns the entry of the method ops names, from the lane's memory of its last one.
func (l *laneState) methodOf(ops *callcore.Ops) *methodEntry {
	if m := l.method; m != nil && m.path == ops.Path {
		return m
	}
	l.method = l.r.method(ops)
	return l.method
}
