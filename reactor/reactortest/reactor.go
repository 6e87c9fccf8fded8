package reactortest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/trixnew/prpc/internal/meshtarget"
	"github.com/trixnew/prpc/reactor"
)

// FlushTimeout bounds how long Flush waits for calls to settle.
const FlushTimeout = 10 * time.Second

// NewReactor returns a reactor whose calls go to b, configured by cfg, and closes it when the
// test ends, failing the test if Close has to cut calls off after FlushTimeout. It sets
// cfg.Conn to b and clears cfg.Target and cfg.Targets, so that the Config production runs
// with can be passed as it is: its idempotent policies are honoured and its transport
// settings ignored (see Backend). An xDS Target (see reactor.Config.Target) is kept, not
// dialled, so that its rules apply as in production: reactor.New rejects the settings the
// control plane owns, and the Backend retries no call of an Idempotent method, since the
// route's retry policy, which decides in production, is the control plane's. A bad cfg fails the test at once. Set cfg.Clock to a
// *ManualClock to control deadlines.
//
// NewReactor also turns on cfg.CheckRequestOwnership, so that game code that modifies a
// request while a call owns it (reusing one request for the next call before the last one
// settled) fails its test with an error naming the contract, with or without the race
// detector, instead of sending the wrong request. Calls that share a request nobody modifies
// pass. The check costs each call two more encodings of its request; a test that measures
// what calls cost passes b as cfg.Conn to reactor.New instead.
func NewReactor(t testing.TB, b *Backend, cfg reactor.Config) *reactor.Reactor {
	t.Helper()
	cfg.Conn, cfg.Targets = b, nil
	if meshtarget.Scheme(cfg.Target) == "" {
		cfg.Target = ""
	}
	cfg.CheckRequestOwnership = true
	r, err := reactor.New(cfg)
	if err != nil {
		t.Fatalf("reactortest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), FlushTimeout)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("reactortest: closing the reactor: %v", err)
		}
	})
	return r
}

// Flush ticks r on the calling goroutine, woken by Ready, until every admitted call has been
// delivered and every callback waiting for a Tick has run — including those of calls that
// Call rejected at submission — and fails the test if that takes longer than FlushTimeout.
// Use it when every submitted call is expected to settle by itself; for calls that wait on a
// manual clock, advance the clock first.
func Flush(t testing.TB, r *reactor.Reactor) {
	t.Helper()
	if err := Drain(r, FlushTimeout); err != nil {
		t.Fatal(err)
	}
}

// Drain ticks r on the calling goroutine, woken by Ready, until r is idle (reactor.Reactor.Idle:
// every admitted call delivered, no callback waiting for a Tick) and a Tick finds nothing left
// to run, or until timeout. Callbacks that submit further calls keep it going until those are
// delivered too.
func Drain(r *reactor.Reactor, timeout time.Duration) error {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		report := r.Tick(time.Hour)
		if r.Idle() && report.Delivered == 0 && report.Remaining == 0 {
			return nil
		}
		if report.Remaining > 0 || report.Delivered > 0 {
			// More may be waiting already: callbacks that ran may have queued some.
			select {
			case <-deadline.C:
				return fmt.Errorf("reactortest: callbacks still queued after %v", timeout)
			default:
			}
			continue
		}
		select {
		case <-r.Ready():
		case <-deadline.C:
			return fmt.Errorf("reactortest: %d calls still pending after %v", r.Stats().Pending, timeout)
		}
	}
}
