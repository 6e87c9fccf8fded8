package reactor

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/keepalive"

	"github.com/trixnew/prpc/internal/dial"
	"github.com/trixnew/prpc/internal/meshtarget"
	"github.com/trixnew/prpc/internal/standin"
)

// The connection a reactor calls through: the checks of the fields that choose it (Target,
// Targets or Conn) and of those that configure it, its reconnect backoff and keepalive, and
// the options New dials it with (package dial dials it and watches its backends).

// Upper bounds of the connection's timings, for programs that check their own configuration
// before New; New rejects a value above its bound with an error naming the field. They are
// minutes, not MaxMaxTimeout's hour: each is a wait during which the connection is down or
// suspect and its calls fail or queue, and gRPC's own defaults are seconds.
const (
	// MaxBackoffDelay bounds Backoff.BaseDelay and Backoff.MaxDelay: a reconnect wait
	// longer than a few minutes keeps the connection down (every call failing with
	// Unavailable) long after the backend is back. gRPC's connection backoff protocol caps
	// the wait at 120 s by default.
	MaxBackoffDelay = 5 * time.Minute
	// MaxMinConnectTimeout bounds Backoff.MinConnectTimeout: an attempt given longer than a
	// few minutes to connect only delays the next one, toward a backend that may since have
	// come back. gRPC's default is 20 s.
	MaxMinConnectTimeout = 5 * time.Minute
	// MaxKeepaliveTimeout bounds Keepalive.Timeout: keepalive is there to notice a silently
	// dead connection before the calls' deadlines, and a wait of more than a few minutes for
	// the ping's answer notices it after them. gRPC's default is 20 s.
	MaxKeepaliveTimeout = 5 * time.Minute
)

// Backoff is the reconnect backoff of a connection, as in the gRPC connection backoff
// protocol: after a failed attempt the next waits BaseDelay, then ×Multiplier each time up to
// MaxDelay, each randomised by ±Jitter.
type Backoff struct {
	// BaseDelay is the wait after the first failure. Default 100 ms; at most
	// MaxBackoffDelay, 5 min.
	BaseDelay time.Duration
	// MaxDelay is the longest wait. Default 5 s, or BaseDelay if that is longer; at least
	// BaseDelay, at most MaxBackoffDelay, 5 min.
	MaxDelay time.Duration
	// Multiplier is the growth factor. Default 1.6; at least 1.
	Multiplier float64
	// Jitter randomises each wait by ±Jitter of it. Default 0.2; None means no jitter, each
	// wait exactly as computed; otherwise more than 0, at most 1.
	Jitter float64
	// MinConnectTimeout is the least time one connection attempt is given. Default 20 s; at
	// most MaxMinConnectTimeout, 5 min.
	MinConnectTimeout time.Duration
}

// Defaults of Backoff.
const (
	defaultBackoffBase       = 100 * time.Millisecond
	defaultBackoffMax        = 5 * time.Second
	defaultBackoffMultiplier = 1.6
	defaultBackoffJitter     = 0.2
	defaultMinConnectTimeout = 20 * time.Second
)

// resolveConnection checks the fields that say how to reach the backends. A Config.Conn
// that stands in for a dialled connection (standin.Is) accepts the fields of a dialled
// connection, checked as for one: it ignores the transport's and honours the retries.
func (c *Config) resolveConnection() error {
	standIn := c.Conn != nil && standin.Is(c.Conn)
	// An xDS Target with a stand-in Conn is the production target of a test: not dialled,
	// but its rules apply (controlPlaneError, and no retries for Idempotent policies).
	meshTest := standIn && meshtarget.Scheme(c.Target) != ""
	set := 0
	for _, ok := range []bool{c.Target != "" && !meshTest, len(c.Targets) > 0, c.Conn != nil} {
		if ok {
			set++
		}
	}
	switch {
	case set == 0:
		return errors.New("prpc: Config.Target, Config.Targets or Config.Conn must be set")
	case set > 1:
		return errors.New("prpc: Config.Target, Config.Targets and Config.Conn are exclusive; set one")
	case c.Conn == nil && c.ConnServiceConfig != "":
		return errors.New("prpc: Config.ConnServiceConfig applies only with Config.Conn: it is the service config Conn was dialled with")
	case c.Conn != nil && !standIn:
		if err := c.dialOnlyError(); err != nil {
			return err
		}
	case c.Conn == nil && c.Credentials == nil:
		return errors.New("prpc: Config.Credentials is nil; choose reactor.Insecure(), reactor.TLS(…) or another explicitly")
	}
	return c.resolveServiceConfigFields()
}

// resolveServiceConfigFields checks the fields from which prpc generates the service config.
func (c *Config) resolveServiceConfigFields() error {
	if err := c.controlPlaneError(); err != nil {
		return err
	}
	seen := make(map[string]bool, len(c.Targets))
	for i, t := range c.Targets {
		switch {
		case t == "":
			return fieldError(fmt.Sprintf("Targets[%d]", i), `""`, "every address must be non-empty")
		case seen[t]:
			return fieldError(fmt.Sprintf("Targets[%d]", i), t, "duplicates an earlier address")
		}
		seen[t] = true
	}
	switch c.LoadBalancing {
	case "", "round_robin", "pick_first":
	default:
		return fieldError("LoadBalancing", strconv.Quote(c.LoadBalancing), `must be "round_robin", "pick_first" or ""`)
	}
	if c.HealthCheck && c.LoadBalancing == "pick_first" {
		return fieldError("LoadBalancing", `"pick_first"`, "HealthCheck needs round_robin")
	}
	if !c.HealthCheck && c.HealthCheckService != "" {
		return fieldError("HealthCheckService", strconv.Quote(c.HealthCheckService), "applies only with HealthCheck")
	}
	if c.ServiceConfig != "" && (c.LoadBalancing != "" || c.HealthCheck || c.hasIdempotentPolicy()) {
		return errors.New("prpc: Config.ServiceConfig replaces the service config prpc generates from LoadBalancing, HealthCheck and idempotent Policies; set one or the other")
	}
	return nil
}

// controlPlaneError returns nil, or, if Target's resolver supplies the service config
// (meshtarget.Scheme: xDS) and c sets a field that the control plane owns there, an error
// naming each such field and what decides it under xDS instead. Idempotent policies are
// accepted: under xDS the route's retry policy decides which calls are retried, and prpc adds
// no retries of its own. ServiceConfigLookup is accepted: the lookup is on for such a target.
func (c *Config) controlPlaneError() error {
	scheme := meshtarget.Scheme(c.Target)
	if scheme == "" {
		return nil
	}
	var owned []string
	add := func(set bool, field, counterpart string) {
		if set {
			owned = append(owned, fmt.Sprintf("Config.%s (under xDS: %s)", field, counterpart))
		}
	}
	add(c.LoadBalancing != "", "LoadBalancing", "the cluster's lb_policy")
	add(c.HealthCheck, "HealthCheck", "endpoint health, the EDS health status of each endpoint")
	add(c.HealthCheckService != "", "HealthCheckService", "endpoint health, the EDS health status of each endpoint")
	add(c.Retry.isSet(), "Retry", "the route's retry_policy")
	add(c.ServiceConfig != "", "ServiceConfig", "the listener, route and cluster resources the resolver turns into the service config")
	if len(owned) == 0 {
		return nil
	}
	verb := "are"
	if len(owned) == 1 {
		verb = "is"
	}
	return fmt.Errorf("prpc: %s %s set, but Config.Target %q is resolved by gRPC's %q resolver, which supplies the service config from the control plane; configure it there and leave the field unset",
		joinFields(owned), verb, c.Target, scheme)
}

// dialOnlyError returns nil, or, if c sets fields that apply only to a connection prpc
// dials, an error naming each of them. The fields of the service config apply to Conn too
// when ConnServiceConfig says that Conn was dialled with it.
func (c *Config) dialOnlyError() error {
	var fields []string
	inServiceConfig := false // a field of the service config is among fields
	add := func(set bool, field string) {
		if set {
			fields = append(fields, "Config."+field)
		}
	}
	addSC := func(set bool, field string) {
		if set && c.ConnServiceConfig == "" {
			inServiceConfig = true
			add(true, field)
		}
	}
	add(c.Credentials != nil, "Credentials")
	add(len(c.DialOptions) > 0, "DialOptions")
	add(c.ServiceConfig != "", "ServiceConfig")
	add(c.ServiceConfigLookup, "ServiceConfigLookup")
	add(c.Backoff != Backoff{}, "Backoff")
	add(c.Keepalive != keepalive.ClientParameters{}, "Keepalive")
	addSC(c.LoadBalancing != "", "LoadBalancing")
	addSC(c.HealthCheck, "HealthCheck")
	addSC(c.HealthCheckService != "", "HealthCheckService")
	for i, p := range c.Policies {
		switch {
		case !p.Idempotent:
		case isNilDescriptor(p.Method):
			addSC(true, fmt.Sprintf("Policies[%d] (idempotent)", i))
		default:
			addSC(true, fmt.Sprintf("Policies[%d] (idempotent %s)", i, p.Method.Path()))
		}
	}
	addSC(c.Retry.isSet(), "Retry")
	if len(fields) == 0 {
		return nil
	}
	verb, pronoun := "apply", "them"
	if len(fields) == 1 {
		verb, pronoun = "applies", "it"
	}
	where := ""
	if inServiceConfig {
		where = " (balancing, health checking and retries in its service config: dial Conn with the one Config.ServiceConfigJSON returns and set Config.ConnServiceConfig to it)"
	}
	return fmt.Errorf("prpc: %s %s to a connection prpc dials; with Config.Conn, set %s on the connection%s",
		joinFields(fields), verb, pronoun, where)
}

// joinFields returns "A", "A and B", "A, B and C"….
func joinFields(fields []string) string {
	if len(fields) == 1 {
		return fields[0]
	}
	return strings.Join(fields[:len(fields)-1], ", ") + " and " + fields[len(fields)-1]
}

// callConn returns the connection the reactor calls with c.Conn: c.Conn itself, or, for a
// stand-in for a dialled connection, the one it returns for c's retry policy (none with an
// xDS Target, the production target of a test).
func (c *Config) callConn() grpc.ClientConnInterface {
	if !standin.Is(c.Conn) {
		return c.Conn
	}
	retry := standin.Retry{
		MaxAttempts:        c.Retry.MaxAttempts,
		RetryableCodes:     slices.Clone(c.Retry.RetryableCodes),
		ThrottleMaxTokens:  c.Retry.ThrottleMaxTokens,
		ThrottleTokenRatio: c.Retry.ThrottleTokenRatio,
	}
	for _, p := range c.Policies {
		// Under an xDS Target the route's retry policy decides, which a test cannot know:
		// prpc adds no retries of its own, with a stand-in as on the wire. A hedged method
		// is not retried.
		if p.Idempotent && p.Hedge == nil && meshtarget.Scheme(c.Target) == "" {
			if retry.Idempotent == nil {
				retry.Idempotent = make(map[string]bool)
			}
			retry.Idempotent[p.Method.Path()] = true
		}
	}
	return standin.For(c.Conn, retry)
}

// balancer returns the load-balancing policy prpc puts in the generated service config, or
// "" for gRPC's default.
func (c *Config) balancer() string {
	if c.LoadBalancing == "" && (len(c.Targets) > 0 || c.HealthCheck) {
		return "round_robin"
	}
	return c.LoadBalancing
}

// dial dials the connection for Config.Target or Targets, whose balancer reports each
// backend's connectivity to r's backends table, without waiting for it to connect.
func (r *Reactor) dial() error {
	r.subconns = dial.NewSubconnTable()
	opts, err := r.cfg.dialOptions(r.subconns)
	if err == nil {
		r.cc, err = dial.NewClient(opts, &r.handshakes, r.subconns)
	}
	if err != nil {
		r.subconns.Release()
		return err
	}
	r.conn = r.cc
	r.ownScheme = meshtarget.Scheme(r.cfg.Target)
	r.backends.listed = func() (map[string]connectivity.State, bool) {
		return r.subconns.ByAddr(), r.subconns.Observed()
	}
	return nil
}

// dialOptions returns the settings of the connection New dials for cfg, whose balancers
// report each backend's connectivity to subconns.
func (cfg *Config) dialOptions(subconns *dial.SubconnTable) (dial.Options, error) {
	tc, err := cfg.Credentials.transport()
	if err != nil {
		return dial.Options{}, err
	}
	// Credentials other than Insecure are wrapped to record the outcome of every handshake.
	_, plaintext := cfg.Credentials.(insecureCreds)
	sc := cfg.ServiceConfig
	if sc == "" {
		sc = cfg.serviceConfig(subconns)
	}
	b := cfg.Backoff
	return dial.Options{
		Target:           cfg.Target,
		Targets:          cfg.Targets,
		Credentials:      tc,
		RecordHandshakes: !plaintext,
		DialOptions:      cfg.DialOptions,
		ConnectParams: grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  b.BaseDelay,
				Multiplier: b.Multiplier,
				Jitter:     b.Jitter,
				MaxDelay:   b.MaxDelay,
			},
			MinConnectTimeout: b.MinConnectTimeout,
		},
		Keepalive:           cfg.Keepalive,
		ServiceConfig:       sc,
		ServiceConfigLookup: cfg.ServiceConfigLookup,
		Limits:              cfg.Limits,
	}, nil
}

// resolve checks b and returns it with every default filled in.
func (b Backoff) resolve() (Backoff, error) {
	c := backoffCurve{base: b.BaseDelay, most: b.MaxDelay, mult: b.Multiplier, jitter: b.Jitter}
	field, v, rule := c.resolve("Backoff.")
	b.BaseDelay, b.MaxDelay, b.Multiplier, b.Jitter = c.base, c.most, c.mult, c.jitter
	if b.MinConnectTimeout == 0 {
		b.MinConnectTimeout = defaultMinConnectTimeout
	}
	switch {
	case field != "":
		return b, fieldError(field, v, rule)
	case b.MinConnectTimeout < 0 || b.MinConnectTimeout > MaxMinConnectTimeout:
		return b, fieldError("Backoff.MinConnectTimeout", b.MinConnectTimeout, fmt.Sprintf("must be more than 0 and at most MaxMinConnectTimeout, %v (0 means the default, %v)", MaxMinConnectTimeout, defaultMinConnectTimeout))
	}
	return b, nil
}

// backoffCurve is what the reconnect backoff (Config.Backoff) and a stream's resubscription
// (calls.Resubscribe) share: the first and the longest delay, the growth and the jitter,
// with the same defaults and bounds.
type backoffCurve struct {
	base, most   time.Duration
	mult, jitter float64
}

// resolve fills c's zero fields with their defaults (None jitter: none) and checks them. If
// one is out of bounds, it returns its name (prefix, then the field's), its value and the
// rule it breaks; otherwise field is "".
func (c *backoffCurve) resolve(prefix string) (field string, v any, rule string) {
	if c.base == 0 {
		c.base = defaultBackoffBase
	}
	if c.most == 0 {
		c.most = max(defaultBackoffMax, c.base)
	}
	if c.mult == 0 {
		c.mult = defaultBackoffMultiplier
	}
	switch c.jitter {
	case 0:
		c.jitter = defaultBackoffJitter
	case None:
		c.jitter = 0
	}
	switch {
	case c.base < 0 || c.base > MaxBackoffDelay:
		return prefix + "BaseDelay", c.base, fmt.Sprintf("must be more than 0 and at most MaxBackoffDelay, %v (0 means the default, %v)", MaxBackoffDelay, defaultBackoffBase)
	case c.most < c.base || c.most > MaxBackoffDelay:
		return prefix + "MaxDelay", c.most, fmt.Sprintf("must be at least %sBaseDelay (%v) and at most MaxBackoffDelay, %v (0 means the default, %v)", prefix, c.base, MaxBackoffDelay, defaultBackoffMax)
	case c.mult < 1 || math.IsNaN(c.mult):
		return prefix + "Multiplier", c.mult, fmt.Sprintf("must be at least 1 (0 means the default, %v)", defaultBackoffMultiplier)
	case c.jitter < 0 || c.jitter > 1 || math.IsNaN(c.jitter):
		return prefix + "Jitter", c.jitter, fmt.Sprintf("must be more than 0 and at most 1 (0 means the default, %v; None, -1, means no jitter)", defaultBackoffJitter)
	}
	return "", nil, ""
}

// minKeepaliveTime is the shortest Keepalive.Time grpc-go honours.
const minKeepaliveTime = 10 * time.Second

// defaultKeepaliveTimeout is the Keepalive.Timeout used when Time is set and Timeout is not.
const defaultKeepaliveTimeout = 20 * time.Second

// validateKeepalive checks k and fills in the default of its Timeout, if keepalive is on.
func validateKeepalive(k *keepalive.ClientParameters) error {
	switch {
	case *k == keepalive.ClientParameters{}:
		return nil
	case k.Time < minKeepaliveTime:
		return fieldError("Keepalive.Time", k.Time, fmt.Sprintf("must be at least %v, grpc-go's minimum, when keepalive is used", minKeepaliveTime))
	case k.Timeout < 0 || k.Timeout > MaxKeepaliveTimeout:
		return fieldError("Keepalive.Timeout", k.Timeout, fmt.Sprintf("must be more than 0 and at most MaxKeepaliveTimeout, %v (0 means the default, %v)", MaxKeepaliveTimeout, defaultKeepaliveTimeout))
	}
	if k.Timeout == 0 {
		k.Timeout = defaultKeepaliveTimeout
	}
	return nil
}
