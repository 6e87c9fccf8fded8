package reactor

import (
	"fmt"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/meshtarget"
	"github.com/trixnew/prpc/limits"
)

// Defaults of Config. The timeouts and MaxOutstanding are pRPC's. Workers × BatchSize is 32
// calls in flight, not pRPC's 2 × 4: in the burst suite (its report is benchmarks/README.md)
// a large burst drains markedly faster with 32 lanes than with 8, at the same client CPU per
// call, and 32 stays well under the 100 concurrent streams that HTTP/2 servers and proxies
// commonly allow per connection. An idle lane is a parked goroutine and costs only its stack.
const (
	DefaultWorkers        = 4
	DefaultBatchSize      = 8
	DefaultTimeout        = 1500 * time.Millisecond
	DefaultMaxTimeout     = 5 * time.Second
	DefaultMaxOutstanding = 4096
	DefaultMaxStreams     = 64
)

// Upper bounds of Config's fields, for programs that check their own configuration before
// New. New rejects a value above its bound with an error naming the field.
const (
	MaxWorkers        = 256
	MaxBatchSize      = 1024
	MaxMaxTimeout     = time.Hour
	MaxMaxOutstanding = 1 << 20
	MaxMaxStreams     = 10000
)

// None, in a field whose documentation says so, asks explicitly for none of what the field
// sets, where its zero value means a default other than none: CriticalReserve (no slots kept
// for critical calls) and Backoff.Jitter (waits not randomised). It is the untyped constant
// -1, so it fits each such field's type.
const None = -1

// Config configures a Reactor. The zero value of each field means its documented default;
// where that default is not "none" and none is allowed, the field takes None for explicitly
// none (CriticalReserve, Backoff.Jitter). New rejects values outside the documented bounds
// with an error naming the field.
type Config struct {
	// Target is the gRPC target to dial: "host:port", or any target gRPC resolves, such as
	// "dns:///db.internal:50051" (every address the name resolves to is a backend). Exactly
	// one of Target, Targets and Conn must be set. New rejects a target written with a scheme
	// ("foo:///x") that no resolver is registered for, globally or with grpc.WithResolvers
	// in DialOptions, rather than let gRPC take it whole for a host name that never resolves.
	//
	// A target whose resolver supplies the service config itself, decided by the target's
	// scheme as gRPC parses it, is "xds" (gRPC's proxyless service mesh, "xds:///service",
	// with google.golang.org/grpc/xds imported by the program and a bootstrap file) or
	// "google-c2p". For such a target the control plane decides balancing, health and
	// retries: prpc dials it with the resolver's service config, neither its own nor the
	// lookup turned off, and New rejects the fields the control plane owns there, each named
	// with its xDS counterpart: LoadBalancing (the cluster's lb_policy), HealthCheck and
	// HealthCheckService (endpoint health, the EDS health status), Retry (the route's
	// retry_policy) and ServiceConfig. Policies keep their timeouts, WaitForReady, Critical
	// and ResponseMetadata; Idempotent is accepted (see MethodPolicy.Idempotent).
	// ServiceConfigLookup is implied. Stats.Backends counts calls per backend address and,
	// when the resolver is the one registered for the scheme (as the blank import of
	// google.golang.org/grpc/xds registers it), reports each backend's connectivity: prpc
	// wraps that resolver so as to watch the subchannels beneath the control plane's
	// balancer, which it runs unchanged. With a resolver passed in DialOptions, which gRPC
	// prefers, the states are unknown.
	Target string

	// Targets, instead of Target, is a static list of backend addresses ("host:port"),
	// resolved once by prpc itself. Calls are spread over them with gRPC's round_robin
	// balancer.
	Targets []string

	// LoadBalancing is the balancing policy over the backends of Target: "round_robin"
	// (spread calls over every backend), "pick_first" (use one at a time), or "" for
	// round_robin when Targets or HealthCheck is set and gRPC's default (pick_first, unless a
	// service config says otherwise) otherwise. Rejected with an xDS Target, whose cluster's
	// lb_policy decides.
	LoadBalancing string

	// HealthCheck turns on client-side health checking with the standard grpc.health.v1
	// service: a backend that reports anything but SERVING for HealthCheckService ("" means
	// the whole server) gets no calls until it reports SERVING again. It needs round_robin
	// and backends that serve grpc.health.v1. Rejected with an xDS Target, where endpoint
	// health (the EDS health status the control plane reports) decides.
	HealthCheck        bool
	HealthCheckService string

	// Conn, instead of Target, is a connection the caller owns, for example a
	// *grpc.ClientConn dialled with options prpc does not offer, or an in-memory fake. The
	// caller owns its transport settings and closes it after the reactor; prpc still applies
	// its limits and codec to every call, except Limits.MaxReceivedHeaderBytes, a setting of
	// the connection: set it on a *grpc.ClientConn with grpc.WithMaxHeaderListSize (its
	// default, grpc-go's, may change between releases). The fields that configure a
	// connection prpc dials (Credentials, DialOptions, ServiceConfig, ServiceConfigLookup,
	// Backoff, Keepalive) must be unset with Conn; so must those of its service config
	// (LoadBalancing, HealthCheck, HealthCheckService, Retry, and Idempotent in Policies,
	// since retries live in the connection's service config) unless ConnServiceConfig says
	// that Conn carries them. New rejects them, naming each one set. The exception is a
	// reactortest.Backend: with one, New accepts them all, checked as for a dialled
	// connection, and the Backend retries the calls of idempotent methods as Retry says
	// (package reactortest tells which settings it honours); with one, an xDS Target (see
	// Target) may be set too, and is not dialled: its rules apply, and the Backend retries
	// nothing, as prpc adds no retries under xDS. Close never closes a Conn.
	Conn grpc.ClientConnInterface

	// ConnServiceConfig, with Conn, is the service config Conn was dialled with
	// (grpc.WithDefaultServiceConfig), exactly as ServiceConfigJSON returned it for this
	// Config. It states that the connection balances, checks health and retries the calls of
	// idempotent methods as this Config says, so New accepts LoadBalancing, HealthCheck,
	// HealthCheckService, Retry and idempotent Policies (a generated …Policies(), say) with
	// Conn. New rejects a ConnServiceConfig that is not what ServiceConfigJSON returns for
	// the Config it is given, so that the connection and the reactor cannot disagree on which
	// methods are retried; it cannot check that Conn was dialled with it. Empty by default.
	ConnServiceConfig string

	// Credentials secure the connection dialled for Target or Targets: Insecure(), TLS(…),
	// MutualTLS(…), their file variants, or FromTransport(…). Required with Target and
	// Targets; there is no default, so that plaintext is always a choice.
	Credentials Credentials

	// Workers is the number of invokers, each a group of BatchSize lanes whose load Stats
	// reports. Default 4, from 1 to 256.
	Workers int

	// BatchSize is the number of calls each invoker keeps in flight: each invoker has
	// BatchSize lanes, goroutines that run one transport call at a time. Workers × BatchSize
	// calls run at once at most; more wait, in submission order, for the next free lane.
	// New starts all Workers × BatchSize lanes at once. Default 8, from 1 to 1024.
	BatchSize int

	// DefaultTimeout is the timeout of a call whose Options give none. Default 1.5 s; more
	// than zero and at most MaxTimeout.
	DefaultTimeout time.Duration

	// MaxTimeout is the longest timeout a call may ask for. It also bounds how long Close can
	// wait with a context that has no deadline. Default 5 s; at most 1 h.
	MaxTimeout time.Duration

	// MaxOutstanding bounds the calls admitted and not yet delivered by Tick: queued, in
	// flight, and completed but waiting for Tick. Beyond it calls fail at once with
	// ErrOverloaded, so memory stays bounded when the backend is slow or down or the host
	// stops ticking. Default 4096, from 1 to 1,048,576.
	MaxOutstanding int

	// MaxStreams bounds the streams (Watch, Bidi) opened and whose end Tick has not yet
	// delivered: beyond it a stream ends at once with ErrOverloaded, NotSent. Each open stream
	// holds a goroutine of prpc's (two for Bidi) and gRPC's, and one of the server's
	// concurrent streams (MAX_CONCURRENT_STREAMS, often 100), which the unary calls share.
	// Default 64, from 1 to 10,000.
	MaxStreams int

	// Limits bounds the bytes of each call; zero fields mean their defaults.
	Limits limits.Limits

	// DialOptions are added when dialling Target or Targets, before prpc's own options, so
	// they cannot raise the configured limits or replace the credentials.
	DialOptions []grpc.DialOption

	// ServiceConfig, if set, is the JSON default service config of the connection (see
	// grpc.WithDefaultServiceConfig), used instead of the one prpc generates from
	// LoadBalancing, HealthCheck, Policies and Retry; it cannot be combined with them, nor
	// with an xDS Target, whose resolver supplies the service config.
	ServiceConfig string

	// ServiceConfigLookup lets the name resolver supply the service config (for example
	// from DNS TXT records), overriding the default one. Off by default, so that what runs is
	// what the program configured. An xDS Target (see Target) always has it on.
	ServiceConfigLookup bool

	// Policies are per-method defaults: timeout, wait-for-ready, whether a method is
	// idempotent (and so retried) and whether its calls are critical.
	Policies []MethodPolicy

	// Retry is how the calls of idempotent methods are retried; zero fields mean their
	// defaults. Calls of other methods are never retried. Rejected with an xDS Target,
	// where the route's retry_policy decides.
	Retry RetryPolicy

	// CriticalReserve is the number of MaxOutstanding's slots kept for critical calls
	// (MethodPolicy.Critical or calls.Options.Critical): other calls are rejected with
	// ErrOverloaded once MaxOutstanding − CriticalReserve calls are outstanding, while
	// critical ones are admitted up to MaxOutstanding. Default: MaxOutstanding/10 if a
	// policy is Critical, none otherwise; None means none; at most MaxOutstanding − 1.
	//
	// A reactor whose policies mark no method Critical reserves nothing by default, so that
	// its other calls keep all of MaxOutstanding: a call marked only by calls.Options.Critical
	// then has no more room than any other, and when it is rejected for overload its error
	// says that CriticalReserve is zero and how to set it. Set CriticalReserve when calls are
	// marked critical one by one.
	CriticalReserve int

	// AdaptiveLimit tunes the adaptive limit on the calls in flight, which lets their number
	// adapt to the backend, from its Floor up to Workers × BatchSize: calls above the limit
	// wait in prpc's queue, so that an overloaded backend is not sent more calls than it can
	// answer in time (see AdaptiveLimit). Nil, the default, is the limit with its defaults;
	// zero fields mean their defaults; AdaptiveLimit.Disabled turns it off, so that the lanes
	// run Workers × BatchSize calls whatever the backend says.
	AdaptiveLimit *AdaptiveLimit

	// Backoff is the reconnect backoff of the connection; zero fields mean their defaults.
	Backoff Backoff

	// Keepalive, if its Time is set, makes the connection ping the server after Time without
	// activity and close it (failing its calls with Unavailable) when no answer comes within
	// Timeout (default 20 s, at most MaxKeepaliveTimeout, 5 min), so a silently dead connection is noticed before
	// the calls' deadlines. Off by default: servers refuse pings more often than their
	// enforcement policy allows (grpc-go servers: once per 5 minutes by default) with a
	// too_many_pings GOAWAY that fails every call on the connection, so enable it only with a
	// server that permits it. Time must be at least 10 s, grpc-go's minimum.
	Keepalive keepalive.ClientParameters

	// Methods, if not empty, is an allowlist: calls of any other method fail with
	// ErrInvalidArgument without reaching the network. Paths must be unique.
	Methods []calls.Descriptor

	// OnReady, if set, is called when completions are waiting for Tick, at most once until
	// the next Tick drains them. prpc calls it from one notifier goroutine of its own, one
	// call at a time: never from an invoker lane or the reactor goroutine, never on the
	// goroutine that calls Tick, and never inside Call. It suits hosts that run work
	// submitted to their own goroutine: hand one Tick to that goroutine without blocking, for
	// example w.Do(func(…) { r.Tick(b) }), and return. Declare the *Reactor variable before
	// the Config literal so that OnReady can use it; it is not called before New returns.
	//
	// A wake-up whose completions a Tick took before the notifier goroutine got to call
	// OnReady is skipped; completions that settle later, or that a Tick leaves for the next
	// one, call it again, so none waits for a Tick unannounced. A Tick that begins just as
	// OnReady is called can still take its completions first: the Tick that call brings on
	// then, rarely, finds nothing to do.
	//
	// It should not block. A send that can wait, for example on a bounded queue while it is
	// full, belongs in a non-blocking hand-off instead (a select with a default case on a
	// channel the host drains), or use Ready. A hook that blocks delays only the wake-ups
	// after it, never a call: lanes, deadlines and cancels go on without it. Once Shutdown or
	// Close has begun, OnReady is no longer called, since they tick the reactor themselves,
	// and neither waits long for a call of it still running: once everything is delivered
	// and closed, they wait for it until half a second has passed since they began, never
	// past their context, and then return an error that matches ErrHookBlocked.
	OnReady func()

	// OnCallbackPanic, if set, receives the value of every panic raised by a promise
	// callback, on the Tick goroutine. Default: log it through Logger with its stack. This
	// includes the panics of misuse inside a callback: a callback that calls Tick or Close
	// panics, and, like any other callback panic, that panic is recovered and reaches only
	// OnCallbackPanic; the Tick that ran the callback goes on.
	OnCallbackPanic func(recovered any)

	// Logger receives prpc's log records. Default slog.Default().
	Logger *slog.Logger

	// Clock is the source of time for deadlines, Tick budgets and latencies. Default: the
	// system clock. Tests may pass a manual clock (see package reactortest).
	Clock Clock

	// CheckRequestOwnership, for tests and development, checks that no request is modified
	// while a call owns it: Call and Go own their request until the call settles (its lane
	// encodes it, as grpc-go's SendMsg does), so a request reused for the next call before
	// the earlier one settled is sent with whatever it holds when the lane reads it, and
	// without the race detector nothing says so. With the check on, a call whose request an
	// unsettled call of this reactor owns, and which was modified since that call was made,
	// fails at once with ErrInvalidArgument; and a call whose request was modified after it
	// was submitted fails with ErrInvalidArgument just before its lane would send it. Both
	// errors name the contract, and neither call is sent. Calls that share a request nobody
	// modifies pass; a request that does not encode is not checked (it fails on its lane).
	//
	// Its cost when on: each Call and Go encodes its request once more, deterministically,
	// and takes a lock to record it until the call is delivered; each lane encodes it once
	// more before sending it. Off by default, and then it costs nothing: not one allocation
	// or lock on the calling goroutine or the lanes. reactortest.NewReactor turns it on.
	CheckRequestOwnership bool
}

// resolve checks c and returns it with every default filled in.
func (c Config) resolve() (Config, error) {
	if err := c.resolveConnection(); err != nil {
		return c, err
	}
	c, err := c.resolveSettings()
	if err != nil {
		return c, err
	}
	if c.ConnServiceConfig != "" {
		if want := c.serviceConfig(nil); c.ConnServiceConfig != want {
			return c, fmt.Errorf("prpc: Config.ConnServiceConfig is not the service config of this Config, which is %s (Config.ServiceConfigJSON); dial Config.Conn with it and set ConnServiceConfig to it", want)
		}
	}
	return c, nil
}

// ServiceConfigJSON returns the service config that New would dial c's connection with
// (grpc.WithDefaultServiceConfig), for a program that dials its own connection and passes it
// as Conn: the balancing policy (LoadBalancing), health checking (HealthCheck) and a retry
// policy for each idempotent method of Policies that is not hedged, with Retry's backoff and
// throttling. Dial with it, set Conn to the connection and ConnServiceConfig to the string,
// and New accepts those fields with Conn:
//
//	sc, err := cfg.ServiceConfigJSON()
//	…
//	cc, err := grpc.NewClient(target, grpc.WithTransportCredentials(creds),
//		grpc.WithDefaultServiceConfig(sc), grpc.WithDisableServiceConfig())
//	…
//	cfg.Conn, cfg.ConnServiceConfig = cc, sc
//	r, err := reactor.New(cfg)
//
// grpc.WithDisableServiceConfig keeps a service config from the resolver (DNS TXT records,
// say) from replacing it, as New does unless ServiceConfigLookup is set. The config names
// gRPC's own balancer (round_robin, or pick_first when LoadBalancing is "" and neither
// Targets nor HealthCheck asks for round_robin), where a connection New dials uses a wrapper
// of it that reports each backend's state to Stats; it is otherwise the one New uses, and
// any grpc-go connection accepts it. If ServiceConfig is set, it returns ServiceConfig, as
// New uses it. For an xDS Target (see Config.Target) it returns an error: the resolver
// supplies the service config there.
//
// It checks c as New does, except that it needs none of Target, Targets, Conn and
// Credentials and ignores Conn and ConnServiceConfig: it serves before the connection
// exists. Errors name the Config field at fault. It dials nothing and starts nothing.
func (c Config) ServiceConfigJSON() (string, error) {
	c.Conn, c.ConnServiceConfig = nil, ""
	if err := c.resolveServiceConfigFields(); err != nil {
		return "", err
	}
	if scheme := meshtarget.Scheme(c.Target); scheme != "" {
		return "", fmt.Errorf("prpc: Config.Target %q is resolved by gRPC's %q resolver, which supplies the service config itself; there is no service config of prpc's to dial it with", c.Target, scheme)
	}
	c, err := c.resolveSettings()
	if err != nil {
		return "", err
	}
	if c.ServiceConfig != "" {
		return c.ServiceConfig, nil
	}
	return c.serviceConfig(nil), nil
}

// fieldError names a Config field and its bounds.
func fieldError(field string, value any, bounds string) error {
	return fmt.Errorf("prpc: Config.%s is %v; %s", field, value, bounds)
}
