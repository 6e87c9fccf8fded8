package reactor_test

import (
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/roundrobin"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// The tests of this file stand in for gRPC's xDS resolver, which the library does not import
// (tools/xdstest runs a real control plane): a resolver under the scheme "xds" (or
// "google-c2p") that, like xDS's, yields no addresses at all and only a service config, whose
// balancer finds the backends in its own config, as xDS's balancers get them from the
// control plane. A connection that ignores the resolver's service config runs its default
// balancer over zero addresses, and every call fails.

// configAddrsBalancer is the test balancer: round_robin over the addresses in its config.
const configAddrsBalancer = "prpc_test_config_addrs"

// The test balancer, and a configResolver registered for "google-c2p" (the library's
// tests do not import gRPC's), which takes its addresses from the target's path.
func init() {
	balancer.Register(configAddrsBuilder{})
	resolver.Register(configResolver{scheme: "google-c2p"})
}

type configAddrsConfig struct {
	serviceconfig.LoadBalancingConfig
	Addrs []string `json:"addrs"`
}

type configAddrsBuilder struct{}

func (configAddrsBuilder) Name() string { return configAddrsBalancer }

func (configAddrsBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &configAddrs{Balancer: balancer.Get(roundrobin.Name).Build(cc, opts)}
}

func (configAddrsBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &configAddrsConfig{}
	return c, json.Unmarshal(js, c)
}

type configAddrs struct{ balancer.Balancer }

func (b *configAddrs) UpdateClientConnState(s balancer.ClientConnState) error {
	c := s.BalancerConfig.(*configAddrsConfig)
	s.BalancerConfig = nil
	s.ResolverState.Addresses = nil
	s.ResolverState.Endpoints = nil
	for _, a := range c.Addrs {
		s.ResolverState.Endpoints = append(s.ResolverState.Endpoints, resolver.Endpoint{Addresses: []resolver.Address{{Addr: a}}})
	}
	return b.Balancer.UpdateClientConnState(s)
}

// configResolver is the test resolver: no addresses, and a service config of
// configAddrsBalancer over addrs, or, if addrs is nil, over the comma-separated addresses
// of the target's path.
type configResolver struct {
	scheme string
	addrs  []string
}

func (b configResolver) Scheme() string { return b.scheme }

func (b configResolver) Build(t resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) (resolver.Resolver, error) {
	if b.addrs == nil {
		b.addrs = strings.Split(t.Endpoint(), ",")
	}
	addrs, err := json.Marshal(b.addrs)
	if err != nil {
		return nil, err
	}
	sc := fmt.Sprintf(`{"loadBalancingConfig":[{%q:{"addrs":%s}}]}`, configAddrsBalancer, addrs)
	if err := cc.UpdateState(resolver.State{ServiceConfig: cc.ParseServiceConfig(sc)}); err != nil {
		cc.ReportError(err)
	}
	return noopResolver{}, nil
}

type noopResolver struct{}

func (noopResolver) ResolveNow(resolver.ResolveNowOptions) {}
func (noopResolver) Close()                                {}

// withConfigResolver returns the dial option that resolves scheme with a configResolver over
// addrs.
func withConfigResolver(scheme string, addrs ...string) []grpc.DialOption {
	return []grpc.DialOption{grpc.WithResolvers(configResolver{scheme: scheme, addrs: addrs})}
}

// TestResolverSuppliedServiceConfig checks that a Target whose resolver supplies the service
// config (xds, google-c2p, whatever the case of the scheme) works with the default Config:
// calls are balanced as the resolver's config says (round_robin over three backends, each
// within ±20% of its fair share), none fails, Stats.Backends counts each backend's calls,
// and says that their states are unknown: the resolver comes in DialOptions, which gRPC
// prefers to the one prpc wraps for the scheme (TestResolverConfigStates).
func TestResolverSuppliedServiceConfig(t *testing.T) {
	for _, target := range []string{"xds:///svc", "XDS:///svc", "google-c2p:///svc"} {
		t.Run(target, func(t *testing.T) {
			scheme := strings.ToLower(target[:strings.IndexByte(target, ':')])
			srvs := []*testserver.Server{testserver.Start(t), testserver.Start(t), testserver.Start(t)}
			addrs := []string{srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()}
			r := newReactor(t, nil, reactor.Config{
				Target:      target,
				DialOptions: withConfigResolver(scheme, addrs...),
				Backoff:     fastBackoff,
			})
			h := newHost(t, r)
			h.warmUp(srvs)
			const total = 90
			before, stats := serverCalls(srvs), backendCalls(r)
			requireEchoed(t, h.burst("spread", total, 9))
			requireFairShare(t, since(serverCalls(srvs), before), total)
			after := backendCalls(r)
			for i, a := range addrs {
				require.EqualValues(t, srvs[i].Calls(), after[a], "Stats.Backends[%s].Calls", a)
				require.Greater(t, after[a], stats[a], "Stats.Backends[%s].Calls grew", a)
			}
			for _, b := range r.Stats().Backends {
				require.False(t, b.StateKnown, "Stats.Backends[%s].StateKnown under a resolver's service config", b.Addr)
			}
		})
	}
}

// TestResolverConfigStates checks that under a resolver's service config Stats.Backends
// knows each backend's connectivity when the resolver is the one registered for the scheme
// (as gRPC's xds package registers its own): prpc wraps the resolver's balancer and sees the
// subchannels beneath it. Three backends are Ready and counted; one that stops is no longer
// Ready. With a resolver passed in DialOptions, which gRPC prefers, the states stay
// unknown, as TestResolverSuppliedServiceConfig checks.
func TestResolverConfigStates(t *testing.T) {
	srvs := []*testserver.Server{testserver.Start(t), testserver.Start(t), testserver.Start(t)}
	addrs := []string{srvs[0].Addr(), srvs[1].Addr(), srvs[2].Addr()}
	r := newReactor(t, nil, reactor.Config{
		Target:  "google-c2p:///" + strings.Join(addrs, ","),
		Backoff: fastBackoff,
	})
	h := newHost(t, r)
	h.warmUp(srvs)
	requireStates(t, r, map[string]connectivity.State{
		addrs[0]: connectivity.Ready, addrs[1]: connectivity.Ready, addrs[2]: connectivity.Ready,
	})
	calls := backendCalls(r)
	for i, a := range addrs {
		require.EqualValues(t, srvs[i].Calls(), calls[a], "Stats.Backends[%s].Calls", a)
	}
	srvs[2].Stop()
	require.True(t, eventually(func() bool { return backendStates(r)[addrs[2]] != connectivity.Ready }), "the stopped backend still Ready: %v", backendStates(r))
}

// TestResolverConfigNotSent checks that under a resolver's service config a call that gRPC
// failed before giving it a stream is not said to be NotSent, even for a method that is not
// Idempotent: the control plane's retry policy may have retried it after an attempt that
// reached a server. Nothing listens at the only backend's address.
func TestResolverConfigNotSent(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close()) // connection refused from now on
	r := newReactor(t, nil, reactor.Config{Target: "xds:///svc", DialOptions: withConfigResolver("xds", addr)})
	h := newHost(t, r)
	c := h.submit(echo, echoReq("x"), nil)
	h.settle(c)
	requireNotSent(t, c.err, calls.ErrUnavailable, false)
}

// TestControlPlaneSettings checks the settings rule of a Target whose resolver supplies the
// service config: New rejects each setting the control plane owns there, naming the setting,
// its xDS counterpart and the target; it accepts generated-style Policies (Idempotent methods
// with timeouts), the policies' other fields and ServiceConfigLookup, which is on for such a
// target anyway. ServiceConfigJSON has no config to return for such a target.
func TestControlPlaneSettings(t *testing.T) {
	idem := []reactor.MethodPolicy{{Method: echo, Idempotent: true}}
	tests := []struct {
		name string
		cfg  reactor.Config
		want []string // the error's substrings; nil if New must accept cfg
	}{
		{name: "LoadBalancing", cfg: reactor.Config{LoadBalancing: "round_robin"},
			want: []string{"Config.LoadBalancing", "the cluster's lb_policy"}},
		{name: "HealthCheck", cfg: reactor.Config{HealthCheck: true},
			want: []string{"Config.HealthCheck", "EDS health status"}},
		{name: "HealthCheckService", cfg: reactor.Config{HealthCheck: true, HealthCheckService: "svc"},
			want: []string{"Config.HealthCheck (", "Config.HealthCheckService", "EDS health status"}},
		{name: "Retry with an idempotent policy", cfg: reactor.Config{Retry: reactor.RetryPolicy{MaxAttempts: 4}, Policies: idem},
			want: []string{"Config.Retry", "the route's retry_policy"}},
		{name: "Retry alone", cfg: reactor.Config{Retry: reactor.RetryPolicy{MaxAttempts: 4}},
			want: []string{"Config.Retry", "the route's retry_policy"}},
		{name: "ServiceConfig", cfg: reactor.Config{ServiceConfig: `{"loadBalancingConfig":[{"round_robin":{}}]}`},
			want: []string{"Config.ServiceConfig", "route and cluster"}},
		{name: "several", cfg: reactor.Config{LoadBalancing: "pick_first", Retry: reactor.RetryPolicy{MaxAttempts: 2}},
			want: []string{"Config.LoadBalancing", "lb_policy", "Config.Retry", "retry_policy", " are set"}},

		{name: "default", cfg: reactor.Config{}},
		{name: "generated-style policies", cfg: reactor.Config{Policies: []reactor.MethodPolicy{
			{Method: echo, Idempotent: true, Timeout: 300 * time.Millisecond, Critical: true, ResponseMetadata: true},
			{Method: echoOther, Idempotent: true, WaitForReady: true},
		}}},
		{name: "ServiceConfigLookup", cfg: reactor.Config{ServiceConfigLookup: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			cfg.Target, cfg.Credentials = "xds:///svc", reactor.Insecure()
			cfg.DialOptions = withConfigResolver("xds", "127.0.0.1:1") // port 1 refuses
			r, err := reactor.New(cfg)
			if tt.want == nil {
				require.NoError(t, err)
				require.NoError(t, r.Close(closeCtx(t, bound)))
				return
			}
			require.Error(t, err)
			t.Log(err)
			for _, w := range append(tt.want, `"xds:///svc"`, `"xds" resolver`) {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	_, err := reactor.Config{Target: "xds:///svc"}.ServiceConfigJSON()
	require.ErrorContains(t, err, `Config.Target "xds:///svc" is resolved by gRPC's "xds" resolver`)
}
