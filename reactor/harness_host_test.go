package reactor_test

import (
	"context"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/trixnew/prpc/reactor"
)

// tickBudget is the budget of the Ticks a host made by startHost runs while it waits. It is
// generous on purpose: the audit is about the overrun, not about the budget.
const tickBudget = 2 * time.Millisecond

// goid returns the id of the calling goroutine, from the header of its stack trace
// ("goroutine 42 [running]:").
func goid() int64 {
	var buf [64]byte
	s := strings.TrimPrefix(string(buf[:runtime.Stack(buf[:], false)]), "goroutine ")
	id, err := strconv.ParseInt(s[:strings.IndexByte(s, ' ')], 10, 64)
	if err != nil {
		panic("goid: " + err.Error())
	}
	return id
}

// host drives a reactor as a game loop does, on the test goroutine. It records which
// goroutine is inside its Tick or Close, so that callbacks and hooks can check where they run,
// and it tracks the calls submitted through it with what their callbacks saw: those run in
// its Ticks, on the test goroutine, so the records need no lock.
//
// newHost wraps a reactor the test made. startHost also makes the reactor, with callback
// panics and error logs failing the test, measures every Tick against its budget (see
// tickAudit), and when the test ends closes the reactor and checks that every tracked call
// settled exactly once and that no Tick overran.
type host struct {
	t      *testing.T
	r      *reactor.Reactor
	budget time.Duration // of the Ticks the host's waits run
	bound  time.Duration // how long its waits last before they fail the test
	inside atomic.Int64  // goid of the goroutine inside Tick or Close; 0 when none

	calls     []*call     // every call submitted or tracked, in that order
	delivered int         // how many of them have run their callbacks
	stamps    []time.Time // when each call delivered by the current Tick finished its callbacks

	audit        *tickAudit // nil unless startHost made the host
	closedByTest bool       // the test called Close; the final audit then does not judge it
}

// newHost returns a host for r whose waits tick with a budget of a second and last at most
// bound.
func newHost(t *testing.T, r *reactor.Reactor) *host {
	return &host{t: t, r: r, budget: time.Second, bound: bound}
}

// startHost starts a reactor with cfg (its Target set, Credentials defaulting to Insecure)
// whose callback panics and error logs fail the test, and returns an audited host for it:
// its waits tick with tickBudget, every Tick is measured, and when the test ends the host
// closes the reactor and checks every tracked call and every Tick.
func startHost(t *testing.T, cfg reactor.Config) *host {
	t.Helper()
	cfg.OnCallbackPanic = func(p any) { t.Errorf("a promise callback panicked: %v", p) }
	cfg.Logger = slog.New(testLog{t})
	h := newHost(t, newReactor(t, nil, cfg))
	h.budget = tickBudget
	h.audit = newTickAudit()
	t.Cleanup(func() { // before newReactor's, which then finds the reactor closed
		ctx, cancel := context.WithTimeout(context.Background(), bound)
		defer cancel()
		if err := h.r.Close(ctx); err != nil && !h.closedByTest {
			t.Errorf("closing the reactor: %v", err)
		}
		h.requireSettledOnce()
		h.audit.report(t)
	})
	return h
}

// Tick calls the reactor's Tick, marking the calling goroutine as inside it, and measures it
// if the host is audited.
func (h *host) Tick(budget time.Duration) reactor.TickReport {
	h.inside.Store(goid())
	defer h.inside.Store(0)
	h.stamps = h.stamps[:0]
	if h.audit == nil {
		return h.r.Tick(budget)
	}
	return h.audit.tick(h, budget)
}

// Close closes the reactor, as the host's shutdown would, marking the calling goroutine as
// inside it.
func (h *host) Close(ctx context.Context) error {
	h.inside.Store(goid())
	defer h.inside.Store(0)
	h.closedByTest = true
	return h.r.Close(ctx)
}

// Shutdown drains and closes the reactor, as the host's shutdown would, marking the calling
// goroutine as inside it.
func (h *host) Shutdown(ctx context.Context) error {
	h.inside.Store(goid())
	defer h.inside.Store(0)
	h.closedByTest = true
	return h.r.Shutdown(ctx)
}

// stopWithin runs the host's Shutdown or Close (how) with ctx on another goroutine and
// returns its error and how long it took. If it has not returned within limit, the test
// fails: unstick, if not nil, is called first, so that it returns rather than leaks.
func (h *host) stopWithin(how string, ctx context.Context, limit time.Duration, unstick func()) (time.Duration, error) {
	h.t.Helper()
	begin := time.Now()
	errc := make(chan error, 1)
	go func() {
		if how == "Shutdown" {
			errc <- h.Shutdown(ctx)
		} else {
			errc <- h.Close(ctx)
		}
	}()
	select {
	case err := <-errc:
		return time.Since(begin), err
	case <-time.After(limit):
		if unstick != nil {
			unstick()
			recv(h.t, errc, how+" once unstuck")
		}
		h.t.Fatalf("%s did not return within %v", how, limit)
		return 0, nil
	}
}

// onHost reports whether the caller is the goroutine now inside the host's Tick or Close.
func (h *host) onHost() bool { return h.inside.Load() == goid() }

// waitFor ticks, woken by Ready, until cond holds, failing the test after h.bound. It is for
// conditions that callbacks make true.
func (h *host) waitFor(cond func() bool) {
	h.t.Helper()
	tickUntil(h.t, h.r, h.bound, false, "condition", func() { h.Tick(h.budget) }, cond)
}

// pollFor ticks, woken by Ready or every poll, until cond holds, failing the test, naming
// what, after h.bound. It is for conditions that no callback signals, such as a server's
// count or a Stats gauge.
func (h *host) pollFor(what string, cond func() bool) {
	h.t.Helper()
	tickUntil(h.t, h.r, h.bound, true, what, func() { h.Tick(h.budget) }, cond)
}

// pause ticks for d, as a host that keeps its loop running.
func (h *host) pause(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		h.Tick(h.budget)
		time.Sleep(poll)
	}
}
