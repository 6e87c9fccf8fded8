package reactor

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/internal/meshtarget"
)

// HedgePolicy makes prpc hedge a method's calls (MethodPolicy.Hedge), following gRPC's
// hedging design (gRFC A6) where it applies: when a call's transport call has had no response
// after Delay, prpc sends another attempt of it, up to MaxAttempts attempts in all, and the
// first response settles the call and cancels the others. Use it for reads whose latency has
// a long tail (a slow replica, a garbage-collection pause): the call gets the faster
// backend's answer, at the cost of a few extra calls. Never for writes: several attempts may
// run on the server. It requires MethodPolicy.Idempotent.
//
// The first OK response, or the first error whose code is not in NonFatalCodes, settles the
// call; an attempt that fails with a non-fatal code sends the next attempt at once, if any
// is left and the budget allows. By default the non-fatal codes are those Config.Retry
// retries (Unavailable), so that hedging a method keeps the failover its retries gave it. Each attempt carries the call's deadline (grpc-timeout) and, from the second on,
// grpc-previous-rpc-attempts, the number of attempts sent before it. Attempts run on prpc's
// lanes like calls, so they count against Workers × BatchSize (and Config.AdaptiveLimit);
// an attempt waits in the ready queue for a free lane, critical first if its call is.
//
// On a connection prpc dials for Targets, or for a Target balanced with round_robin, an
// attempt goes to a backend no earlier attempt of the call went to, where one is ready. With
// pick_first, under xDS's balancers and with Config.Conn, the connection's balancer picks
// each attempt's backend as it would any call's, so attempts may go to the same one.
//
// A method is hedged or retried, never both (A6): prpc gives a hedged method no gRPC retry
// policy. Hedging is refused where the service config comes from the resolver
// (ServiceConfigLookup, an xDS Target), which could give the method one.
//
// Budget caps the hedges to a share of the calls, as A6's throttling caps retries: a slow
// backend cannot multiply the load. MethodStats counts the hedges sent and those that won.
type HedgePolicy struct {
	// MaxAttempts is the number of attempts, the first included. Default 2; from 2 to 5.
	MaxAttempts int
	// Delay is the wait, after an attempt is sent, before the next one is, while no response
	// has come. Zero sends every attempt at once, unless DelayQuantile is set. Not negative.
	Delay time.Duration
	// DelayQuantile, if set, derives the wait from the method's recent transport latency:
	// it is this quantile (0.95 for the 95th percentile) of the transport times of the
	// method's latest successful attempts (at most 256), at least Delay. Until 32 attempts
	// have succeeded, the method's calls are not hedged. Transport time runs from a lane's
	// start of the attempt to its response; it never includes the wait for Tick. From 0 to 1,
	// exclusive; 0 means a fixed Delay.
	DelayQuantile float64
	// NonFatalCodes are the codes after which the next attempt is sent at once, if the
	// attempts and the budget allow, instead of settling the call. Nil means the codes
	// Config.Retry retries (RetryableCodes, by default Unavailable), so that a hedged method
	// fails over where its retries would have: a backend that goes away fails no call an
	// attempt on another backend can still serve. An empty, non-nil slice means none. OK is
	// not allowed.
	NonFatalCodes []codes.Code
	// Budget is the share of calls that may send a hedge: each hedged call adds Budget
	// tokens to a bucket of at most 10, each hedge takes one, and a hedge without a token is
	// not sent. Default 0.1; more than 0, at most 4 (every attempt of every call).
	Budget float64
}

// Defaults and bounds of HedgePolicy.
const (
	defaultHedgeMaxAttempts = 2
	defaultHedgeBudget      = 0.1
	hedgeBudgetTokens       = 10  // the bucket's capacity
	hedgeLatencySamples     = 256 // the successful attempts DelayQuantile looks at
	hedgeMinSamples         = 32  // the successful attempts before DelayQuantile hedges
)

// hedgePolicy is a resolved HedgePolicy.
type hedgePolicy struct {
	maxAttempts int
	delay       time.Duration
	quantile    float64
	nonFatal    uint32 // bit n: code n is non-fatal
	budget      float64
}

// nonFatalCode reports whether an attempt that failed with code sends the next one at once.
func (p *hedgePolicy) nonFatalCode(code codes.Code) bool {
	return code < 32 && p.nonFatal&(1<<code) != 0
}

// hedgePolicy checks p's hedging fields, field naming p, for a reactor configured by c, and
// returns the resolved policy, or nil if the method is not hedged.
func (p *MethodPolicy) hedgePolicy(field string, c *Config) (*hedgePolicy, error) {
	h := p.Hedge
	if h == nil {
		return nil, nil
	}
	field += ".Hedge"
	switch {
	case !p.Idempotent:
		return nil, fieldError(field, "set", "requires Idempotent: several attempts of a call may run on the server, so only a method without side effects may be hedged")
	case c.ServiceConfigLookup || meshtarget.Scheme(c.Target) != "":
		return nil, fieldError(field, "set", "cannot be used where the resolver supplies the service config (ServiceConfigLookup, an xDS Target): it could give the method a retry policy, and a method is hedged or retried, never both")
	}
	out := &hedgePolicy{maxAttempts: h.MaxAttempts, delay: h.Delay, quantile: h.DelayQuantile, budget: h.Budget}
	if out.maxAttempts == 0 {
		out.maxAttempts = defaultHedgeMaxAttempts
	}
	if out.budget == 0 {
		out.budget = defaultHedgeBudget
	}
	switch {
	case out.maxAttempts < 2 || out.maxAttempts > 5:
		return nil, fieldError(field+".MaxAttempts", h.MaxAttempts, fmt.Sprintf("must be between 2 and 5 (0 means the default, %d)", defaultHedgeMaxAttempts))
	case h.Delay < 0:
		return nil, fieldError(field+".Delay", h.Delay, "must not be negative")
	case !(h.DelayQuantile >= 0 && h.DelayQuantile < 1):
		return nil, fieldError(field+".DelayQuantile", h.DelayQuantile, "must be at least 0 and less than 1 (0 means a fixed Delay)")
	case !(out.budget > 0 && out.budget <= 4):
		return nil, fieldError(field+".Budget", h.Budget, fmt.Sprintf("must be more than 0 and at most 4 (0 means the default, %v)", defaultHedgeBudget))
	}
	nonFatal := h.NonFatalCodes
	if nonFatal == nil {
		nonFatal = c.Retry.RetryableCodes // resolved, and checked, already
	}
	for i, code := range nonFatal {
		if code == codes.OK || code > codes.Unauthenticated {
			return nil, fieldError(fmt.Sprintf("%s.NonFatalCodes[%d]", field, i), code, "must be a gRPC error code (1 to 16)")
		}
		out.nonFatal |= 1 << code
	}
	return out, nil
}
