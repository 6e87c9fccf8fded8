// Package dial makes the connection a reactor dials (reactor.Config's Target or Targets) and
// watches it, for package reactor, which keeps the public side: Config, the Credentials and
// their constructors, Stats.
//
// NewClient creates the connection with grpc.NewClient: credentials (tls.go and pem.go build
// those of TLS from PEM), backoff, keepalive, the service config, the resolver of Targets and
// the checks of Target's scheme (targets.go). The rest watches what gRPC shows nobody else:
// the outcome of each security handshake (handshake.go, classify.go), recorded in a
// HandshakeLog, and the connectivity of each backend (subconns.go, meshstates.go), recorded in
// a SubconnTable by wrappers of gRPC's balancers. Errors name the reactor.Config field at
// fault.
package dial

import (
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	_ "google.golang.org/grpc/health" // registers client-side health checking (Config.HealthCheck)
	"google.golang.org/grpc/keepalive"

	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/internal/meshtarget"
	"github.com/trixnew/prpc/limits"
)

// Options are the settings of the connection, from a checked reactor.Config with its defaults
// filled in.
type Options struct {
	// Target is the gRPC target to dial, unless Targets is set.
	Target string
	// Targets are backend addresses, all served by one connection through a static resolver.
	Targets []string
	// Credentials secure the connection. With RecordHandshakes (any reactor.Credentials but
	// Insecure), they are wrapped to record the outcome of every handshake.
	Credentials      credentials.TransportCredentials
	RecordHandshakes bool
	// DialOptions are the caller's options, which come before prpc's.
	DialOptions []grpc.DialOption
	// ConnectParams are the backoff of reconnections and the connection timeout.
	ConnectParams grpc.ConnectParams
	// Keepalive is applied if its Time is more than 0.
	Keepalive keepalive.ClientParameters
	// ServiceConfig is the default service config: reactor.Config.ServiceConfig, or the one
	// prpc generates. It is not used for a Target whose resolver supplies the service config
	// (meshtarget.Scheme: xDS).
	ServiceConfig string
	// ServiceConfigLookup lets the resolver's service config replace ServiceConfig.
	ServiceConfigLookup bool
	// Limits are the limits whose gRPC dial options apply (limitcheck.DialOptions).
	Limits limits.Limits
}

// NewClient creates the reactor's connection and starts connecting, without waiting. With
// o.RecordHandshakes, the outcome of every handshake is recorded in handshakes; the balancers
// report each backend's connectivity to subconns.
func NewClient(o Options, handshakes *HandshakeLog, subconns *SubconnTable) (*grpc.ClientConn, error) {
	tc := o.Credentials
	if o.RecordHandshakes {
		tc = newRecordingCreds(tc, handshakes)
	}
	handshakes.plaintext = tc.Info().SecurityProtocol == "insecure" // FromTransport's too
	opts := append([]grpc.DialOption(nil), o.DialOptions...)
	opts = append(opts,
		grpc.WithTransportCredentials(tc),
		grpc.WithConnectParams(o.ConnectParams),
	)
	if o.Keepalive.Time > 0 {
		opts = append(opts, grpc.WithKeepaliveParams(o.Keepalive))
	}
	// A resolver that supplies the service config (xDS) gets neither prpc's default config nor
	// the lookup turned off: the config it supplies is the control plane's, and the balancing
	// and routing of every call depend on it. That gRPC did resolve the target with that
	// scheme is checked once the connection exists (resolvedWith).
	ownScheme := meshtarget.Scheme(o.Target) // "" with Targets
	if ownScheme != "" {
		if rb := observingResolver(ownScheme, subconns); rb != nil {
			opts = append(opts, grpc.WithResolvers(rb)) // after DialOptions, whose resolvers win
		}
	} else {
		opts = append(opts, grpc.WithDefaultServiceConfig(o.ServiceConfig))
		if !o.ServiceConfigLookup {
			opts = append(opts, grpc.WithDisableServiceConfig())
		}
	}
	target, field := o.Target, "Target"
	if len(o.Targets) > 0 {
		var resolverOpt grpc.DialOption
		target, resolverOpt = staticResolver(o.Targets)
		opts = append(opts, resolverOpt)
		field = "Targets"
	}
	opts = append(opts, limitcheck.DialOptions(o.Limits)...)
	cc, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("prpc: Config.%s: %w", field, err)
	}
	if field == "Target" {
		scheme := unresolvedScheme(target, cc.CanonicalTarget())
		if scheme == "" && ownScheme != "" && !resolvedWith(cc.CanonicalTarget(), ownScheme) {
			scheme = ownScheme // "xds:svc" without the xds package: gRPC took it for a DNS name
		}
		if scheme != "" {
			cc.Close()
			return nil, unresolvedSchemeError(target, scheme)
		}
	}
	cc.Connect()
	return cc, nil
}
