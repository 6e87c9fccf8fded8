package reactor

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/dial"
)

// MethodPolicy sets the defaults of one method's calls. A call's Options may override
// Timeout, turn WaitForReady on (or off, with FailFast) and make the call Critical;
// Idempotent and ResponseMetadata belong to the method. New resolves the policies once; a
// method's policy is looked up on its first call and kept with its counters.
type MethodPolicy struct {
	// Method is the method the policy applies to. Required; one policy per method.
	Method calls.Descriptor

	// Timeout, if not zero, is the timeout of this method's calls whose Options give none,
	// instead of Config.DefaultTimeout. More than 0 and at most Config.MaxTimeout.
	Timeout time.Duration

	// WaitForReady makes this method's calls wait, up to their deadline, for a ready
	// connection instead of failing at once while the backend is unreachable.
	WaitForReady bool

	// Idempotent marks the method as safe to run more than once, so gRPC retries its calls
	// as Config.Retry says. Calls of other methods are never retried: a call that failed
	// with Unavailable may already have run on the server. Never mark a method whose effect
	// must not repeat (granting currency, say) unless the server deduplicates it.
	//
	// With an xDS Target (see Config.Target) the route's retry_policy decides which calls
	// are retried, and prpc adds no retries of its own: Idempotent is accepted, so that a
	// generated …Policies() serves unchanged, and changes nothing there. Since the control
	// plane may retry any method, a call that gRPC failed before it reached a backend is
	// not said to be NotSent (calls.Error.NotSent) under xDS, whatever its policy.
	Idempotent bool

	// Critical lets this method's calls use the share of MaxOutstanding reserved by
	// Config.CriticalReserve, so that under overload a player's save is not rejected along
	// with cosmetic reads.
	Critical bool

	// ResponseMetadata asks gRPC for the response header and trailer of every call of this
	// method, for Promise.Header, Promise.Trailer and calls.Error.Trailer; without it (and
	// without calls.Options.ResponseMetadata) they are nil, as in grpc-go, where a call gets
	// its header and trailer only when it asks (grpc.Header, grpc.Trailer). Status codes,
	// messages and details reach every error either way. grpc-go hands the header and trailer
	// over only as copies of both maps, which costs each call that asks several allocations
	// (BenchmarkRoundTrip's prpc-metadata case shows how many).
	ResponseMetadata bool

	// Coalesce lets calls of this method that are waiting or in flight at once share one
	// transport call when their requests and outgoing metadata are the same: a call joins
	// the transport call in progress with its key, whatever its own deadline, if that
	// transport call has been running for at most CoalesceMaxAge and serves fewer than
	// CoalesceMax calls; otherwise it sends its own, which later calls join in turn. Use it
	// for reads that many players make at about the same moment (a leaderboard, a shop's
	// catalogue), so that the backend answers each once. Never for writes: a call that joins
	// another is not sent. It requires Idempotent.
	//
	// A call that joins a running transport call may get an answer the backend computed
	// before the call was made, up to CoalesceMaxAge before it: that is the price of sharing.
	//
	// Each call keeps its own deadline, cancel, callbacks and admission slot, and gets its
	// own response message, made before any of the calls is settled, and its own header and
	// trailer if it asks for them. Deadlines stay exact: the transport call carries the
	// deadline (grpc-timeout) of the first call it serves, rounded up to the millisecond so
	// that the calls of one burst share it; a call whose own deadline is later is never failed
	// by it: if the transport call ends at its deadline while such calls still have time,
	// prpc sends one new transport call for them, with the latest of their deadlines, and
	// later calls may join that one in turn. A call that times out or is cancelled settles
	// alone, at once; the transport call is cancelled only once every call it serves has
	// settled without it. Lanes compare the calls, so Call and Go cost no more than for
	// another method.
	//
	// The transport call carries the values (a trace span) of the first call's parent context
	// (calls.Options.Context), but not its deadline or cancellation, which settle that call
	// alone: the spans of the calls that joined it see no transport call. Calls with
	// calls.Options.CallOptions are never coalesced. The requests are compared by their
	// deterministic encoding, so map fields in any order coalesce; the transport call sends
	// that encoding, and gRPC's unary interceptors and stats handlers see its request as a
	// proto.Message that holds a copy of the first call's request but is not of the request's
	// own type. Stats counts the calls that joined another's transport call
	// (MethodStats.Coalesced).
	Coalesce bool
	// CoalesceMax bounds the calls one transport call serves, the first included, so that
	// one slow transport call holds only so many: past it, a call sends its own, which the
	// calls after it join. 0 means 64; not negative. Only with Coalesce.
	CoalesceMax int
	// CoalesceMaxAge bounds how long a transport call may have been running for a call to
	// join it, and so how much older than the call the answer it shares may be. 0 means
	// 500 ms; not negative, at most Config.MaxTimeout. Only with Coalesce.
	CoalesceMaxAge time.Duration

	// Hedge, if set, hedges this method's calls: without a response after a delay, prpc sends
	// another attempt, and the first response wins (see HedgePolicy). Never for writes. It
	// requires Idempotent, and replaces gRPC's retries for the method: Config.Retry does not
	// apply to it. Nil, the default, sends one attempt.
	Hedge *HedgePolicy
}

// Defaults of MethodPolicy's coalescing fields. A read's answer may be shared with calls made
// up to defaultCoalesceMaxAge after its transport call was sent: ten ticks of a 20-tick loop,
// long enough that a steady stream of identical reads keeps one transport call in flight for
// a read of a few hundred milliseconds, short enough that the answer is a fresh one for
// game state.
const (
	defaultCoalesceMax    = 64
	defaultCoalesceMaxAge = 500 * time.Millisecond
)

// RetryPolicy is how gRPC retries the calls of idempotent methods (MethodPolicy.Idempotent),
// following gRPC's retry design: a call is retried only when it failed with one of
// RetryableCodes before the server sent response headers, up to MaxAttempts attempts in all,
// after a randomised exponential backoff; retries are throttled channel-wide when too many
// fail. The deadline covers all attempts. grpc-go never retries a request larger than its
// 256 KiB retry buffer. Zero fields mean their defaults.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts, the first included. Default 3; from 2 to 5.
	MaxAttempts int
	// InitialBackoff is the mean wait before the first retry. Default 50 ms; at most 1 min.
	InitialBackoff time.Duration
	// MaxBackoff bounds the wait. Default 1 s, or InitialBackoff if that is longer; at least
	// InitialBackoff, at most 1 min.
	MaxBackoff time.Duration
	// BackoffMultiplier grows the wait after each retry. Default 2; at least 1.
	BackoffMultiplier float64
	// RetryableCodes are the codes that allow a retry. Default [Unavailable]. OK is not
	// allowed.
	RetryableCodes []codes.Code
	// ThrottleMaxTokens and ThrottleTokenRatio configure retry throttling: each failure
	// takes a token, each success gives back ThrottleTokenRatio, and retries stop while
	// fewer than half of ThrottleMaxTokens remain. Defaults 10 (from 1 to 1000) and 0.1
	// (more than 0, at most 1).
	ThrottleMaxTokens  int
	ThrottleTokenRatio float64
}

// Defaults of RetryPolicy.
const (
	defaultRetryMaxAttempts       = 3
	defaultRetryInitialBackoff    = 50 * time.Millisecond
	defaultRetryMaxBackoff        = time.Second
	defaultRetryBackoffMultiplier = 2.0
	defaultThrottleMaxTokens      = 10
	defaultThrottleTokenRatio     = 0.1
)

// isSet reports whether any field of p was set.
func (p RetryPolicy) isSet() bool {
	return p.MaxAttempts != 0 || p.InitialBackoff != 0 || p.MaxBackoff != 0 || p.BackoffMultiplier != 0 ||
		len(p.RetryableCodes) > 0 || p.ThrottleMaxTokens != 0 || p.ThrottleTokenRatio != 0
}

func (p RetryPolicy) resolve() (RetryPolicy, error) {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = defaultRetryMaxAttempts
	}
	if p.InitialBackoff == 0 {
		p.InitialBackoff = defaultRetryInitialBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = max(defaultRetryMaxBackoff, p.InitialBackoff)
	}
	if p.BackoffMultiplier == 0 {
		p.BackoffMultiplier = defaultRetryBackoffMultiplier
	}
	if len(p.RetryableCodes) == 0 {
		p.RetryableCodes = []codes.Code{codes.Unavailable}
	}
	if p.ThrottleMaxTokens == 0 {
		p.ThrottleMaxTokens = defaultThrottleMaxTokens
	}
	if p.ThrottleTokenRatio == 0 {
		p.ThrottleTokenRatio = defaultThrottleTokenRatio
	}
	const maxBackoff = time.Minute
	switch {
	case p.MaxAttempts < 2 || p.MaxAttempts > 5:
		return p, fieldError("Retry.MaxAttempts", p.MaxAttempts, fmt.Sprintf("must be between 2 and 5 (0 means the default, %d)", defaultRetryMaxAttempts))
	case p.InitialBackoff < 0 || p.InitialBackoff > maxBackoff:
		return p, fieldError("Retry.InitialBackoff", p.InitialBackoff, fmt.Sprintf("must be more than 0 and at most %v (0 means the default, %v)", maxBackoff, defaultRetryInitialBackoff))
	case p.MaxBackoff < p.InitialBackoff || p.MaxBackoff > maxBackoff:
		return p, fieldError("Retry.MaxBackoff", p.MaxBackoff, fmt.Sprintf("must be at least Retry.InitialBackoff (%v) and at most %v (0 means the default, %v)", p.InitialBackoff, maxBackoff, defaultRetryMaxBackoff))
	case !(p.BackoffMultiplier >= 1): // also rejects NaN
		return p, fieldError("Retry.BackoffMultiplier", p.BackoffMultiplier, fmt.Sprintf("must be at least 1 (0 means the default, %v)", defaultRetryBackoffMultiplier))
	case p.ThrottleMaxTokens < 1 || p.ThrottleMaxTokens > 1000:
		return p, fieldError("Retry.ThrottleMaxTokens", p.ThrottleMaxTokens, fmt.Sprintf("must be between 1 and 1000 (0 means the default, %d)", defaultThrottleMaxTokens))
	case !(p.ThrottleTokenRatio > 0 && p.ThrottleTokenRatio <= 1):
		return p, fieldError("Retry.ThrottleTokenRatio", p.ThrottleTokenRatio, fmt.Sprintf("must be more than 0 and at most 1 (0 means the default, %v)", defaultThrottleTokenRatio))
	}
	for i, c := range p.RetryableCodes {
		if c == codes.OK || c > codes.Unauthenticated {
			return p, fieldError(fmt.Sprintf("Retry.RetryableCodes[%d]", i), c, "must be a gRPC error code (1 to 16)")
		}
	}
	return p, nil
}

// methodPolicy is a resolved MethodPolicy, looked up per call.
type methodPolicy struct {
	timeout      time.Duration
	waitForReady bool
	critical     bool
	metadata     bool // ResponseMetadata
	retried      bool // Idempotent and not hedged: gRPC retries its calls
	coalesceMax  int  // the calls one transport call serves at most; 0: not coalesced
	// coalesceMaxAge is how long, in nanoseconds, a transport call may have been running for
	// a call to join it.
	coalesceMaxAge int64
	hedge          *hedgePolicy
}

// resolvePolicies checks c.Policies and indexes them by path.
func (c *Config) resolvePolicies() (map[string]methodPolicy, error) {
	if len(c.Policies) == 0 {
		return nil, nil
	}
	out := make(map[string]methodPolicy, len(c.Policies))
	for i, p := range c.Policies {
		field := fmt.Sprintf("Policies[%d]", i)
		if isNilDescriptor(p.Method) {
			return nil, fieldError(field+".Method", "nil", "every policy names its method")
		}
		path := p.Method.Path()
		if kind := streamKind(p.Method); kind != "" {
			return nil, fieldError(field+".Method", path, "is a "+kind+" method: policies are for unary methods (a stream's options are its StreamOptions)")
		}
		if _, dup := out[path]; dup {
			return nil, fieldError(field+".Method", path, "has another policy already")
		}
		if p.Timeout < 0 || p.Timeout > c.MaxTimeout {
			return nil, fieldError(field+".Timeout", p.Timeout, fmt.Sprintf("must be more than 0 and at most MaxTimeout, %v (0 means DefaultTimeout)", c.MaxTimeout))
		}
		timeout := p.Timeout
		if timeout == 0 {
			timeout = c.DefaultTimeout
		}
		coalesceMax, err := p.coalesceMax(field)
		if err != nil {
			return nil, err
		}
		maxAge, err := p.coalesceMaxAge(field, c.MaxTimeout)
		if err != nil {
			return nil, err
		}
		hedge, err := p.hedgePolicy(field, c)
		if err != nil {
			return nil, err
		}
		out[path] = methodPolicy{timeout: timeout, waitForReady: p.WaitForReady, critical: p.Critical, metadata: p.ResponseMetadata,
			retried: p.Idempotent && hedge == nil, coalesceMax: coalesceMax, coalesceMaxAge: int64(maxAge), hedge: hedge}
	}
	return out, nil
}

// coalesceMax checks p's coalescing fields, field naming p, and returns the calls one
// transport call of its method serves at most, or 0 if its calls are not coalesced.
func (p *MethodPolicy) coalesceMax(field string) (int, error) {
	switch {
	case p.CoalesceMax < 0:
		return 0, fieldError(field+".CoalesceMax", p.CoalesceMax, fmt.Sprintf("must not be negative (0 means the default, %d)", defaultCoalesceMax))
	case p.CoalesceMax > 0 && !p.Coalesce:
		return 0, fieldError(field+".CoalesceMax", p.CoalesceMax, "is set without Coalesce")
	case !p.Coalesce:
		return 0, nil
	case !p.Idempotent:
		return 0, fieldError(field+".Coalesce", true, "requires Idempotent: a call that joins another is not sent, so only a method without side effects may coalesce")
	case p.CoalesceMax == 0:
		return defaultCoalesceMax, nil
	}
	return p.CoalesceMax, nil
}

// coalesceMaxAge checks p's CoalesceMaxAge, field naming p, and returns it resolved.
func (p *MethodPolicy) coalesceMaxAge(field string, maxTimeout time.Duration) (time.Duration, error) {
	switch d := p.CoalesceMaxAge; {
	case d != 0 && !p.Coalesce:
		return 0, fieldError(field+".CoalesceMaxAge", d, "is set without Coalesce")
	case d < 0 || d > maxTimeout:
		return 0, fieldError(field+".CoalesceMaxAge", d, fmt.Sprintf("must not be negative, and at most MaxTimeout, %v (0 means the default, %v)", maxTimeout, defaultCoalesceMaxAge))
	case d == 0:
		return defaultCoalesceMaxAge, nil
	}
	return p.CoalesceMaxAge, nil
}

// serviceConfig returns the service config prpc generates from c: the balancer (gRPC's,
// wrapped to report backend states to table, or gRPC's own if table is nil), health checking,
// and a retry policy for each idempotent method that is not hedged.
func (c *Config) serviceConfig(table *dial.SubconnTable) string {
	type name struct {
		Service string `json:"service"`
		Method  string `json:"method,omitempty"`
	}
	type retryPolicy struct {
		MaxAttempts          int      `json:"maxAttempts"`
		InitialBackoff       string   `json:"initialBackoff"`
		MaxBackoff           string   `json:"maxBackoff"`
		BackoffMultiplier    float64  `json:"backoffMultiplier"`
		RetryableStatusCodes []string `json:"retryableStatusCodes"`
	}
	type methodConfig struct {
		Name        []name       `json:"name"`
		RetryPolicy *retryPolicy `json:"retryPolicy,omitempty"`
	}
	type throttling struct {
		MaxTokens  int     `json:"maxTokens"`
		TokenRatio float64 `json:"tokenRatio"`
	}
	type healthCheck struct {
		ServiceName string `json:"serviceName"`
	}
	var sc struct {
		LoadBalancingConfig []map[string]any `json:"loadBalancingConfig"`
		HealthCheckConfig   *healthCheck     `json:"healthCheckConfig,omitempty"`
		MethodConfig        []methodConfig   `json:"methodConfig,omitempty"`
		RetryThrottling     *throttling      `json:"retryThrottling,omitempty"`
	}
	if table == nil {
		plain := c.balancer()
		if plain == "" {
			plain = "pick_first" // the wrapper's child, as in table.BalancingConfig("")
		}
		sc.LoadBalancingConfig = []map[string]any{{plain: struct{}{}}}
	} else {
		sc.LoadBalancingConfig = []map[string]any{table.BalancingConfig(c.balancer())}
	}
	if c.HealthCheck {
		sc.HealthCheckConfig = &healthCheck{ServiceName: c.HealthCheckService}
	}
	r := c.Retry
	codeNames := make([]string, len(r.RetryableCodes))
	for i, code := range r.RetryableCodes {
		codeNames[i] = codeNames16[code]
	}
	for _, p := range c.Policies {
		if !p.Idempotent || p.Hedge != nil { // a hedged method is not retried (gRFC A6)
			continue
		}
		path := p.Method.Path()[1:]
		slash := strings.IndexByte(path, '/')
		sc.MethodConfig = append(sc.MethodConfig, methodConfig{
			Name: []name{{Service: path[:slash], Method: path[slash+1:]}},
			RetryPolicy: &retryPolicy{
				MaxAttempts:          r.MaxAttempts,
				InitialBackoff:       seconds(r.InitialBackoff),
				MaxBackoff:           seconds(r.MaxBackoff),
				BackoffMultiplier:    r.BackoffMultiplier,
				RetryableStatusCodes: codeNames,
			},
		})
	}
	if len(sc.MethodConfig) > 0 {
		sc.RetryThrottling = &throttling{MaxTokens: r.ThrottleMaxTokens, TokenRatio: r.ThrottleTokenRatio}
	}
	b, err := json.Marshal(sc)
	if err != nil {
		panic("prpc: encoding the service config: " + err.Error()) // only plain values above
	}
	return string(b)
}

// seconds formats d as a service-config duration, e.g. "0.050000000s".
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', 9, 64) + "s"
}

// codeNames16 are the canonical names of the gRPC codes, as service configs spell them.
var codeNames16 = [...]string{
	"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
	"ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
	"ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
	"UNAUTHENTICATED",
}

// streamKind returns "server-streaming" or "bidirectional or client-streaming" if d is a
// *calls.StreamMethod or a *calls.BidiMethod, and "" for a unary *calls.Method. Descriptor
// has no exported method that tells, and calls keeps its unexported side to itself, so New
// asks d's type, once per policy.
func streamKind(d calls.Descriptor) string {
	t := reflect.TypeOf(d)
	if t.Kind() != reflect.Pointer || t.Elem().PkgPath() != callsPkgPath {
		return ""
	}
	name := t.Elem().Name()
	switch {
	case strings.HasPrefix(name, "StreamMethod["):
		return "server-streaming"
	case strings.HasPrefix(name, "BidiMethod["):
		return "bidirectional or client-streaming"
	}
	return ""
}

// callsPkgPath is package calls' import path, as reflect names it.
var callsPkgPath = reflect.TypeOf(calls.Error{}).PkgPath()
