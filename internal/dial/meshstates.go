package dial

import (
	"encoding/json"
	"fmt"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
)

// Under a resolver that supplies the service config (xDS), the balancer is the one that
// config names, the control plane's, and prpc's wrapper of round_robin and pick_first never
// runs. To see each backend's connectivity there too, prpc wraps the resolver gRPC has
// registered for the scheme: each service config that resolver parses gets its balancing
// config wrapped in observedParent, a balancer that runs the resolver's own balancer
// unchanged beneath it and sees every subchannel its descendants create, as the wrapper of
// round_robin does. A resolver passed in Config.DialOptions (grpc.WithResolvers) takes
// precedence over the wrapped one, as gRPC looks those up first; prpc then sees no states.

// observedParentName is the name of the wrapping balancer, registered once per process.
const observedParentName = "prpc_observed_parent"

func init() { balancer.Register(observedParentBuilder{}) }

// observingResolver returns the resolver builder that wraps the one registered for scheme,
// or nil if none is.
func observingResolver(scheme string, table *SubconnTable) resolver.Builder {
	b := resolver.Get(scheme)
	if b == nil {
		return nil
	}
	return observedResolverBuilder{Builder: b, table: table}
}

type observedResolverBuilder struct {
	resolver.Builder
	table *SubconnTable
}

func (b observedResolverBuilder) Build(t resolver.Target, cc resolver.ClientConn, opts resolver.BuildOptions) (resolver.Resolver, error) {
	return b.Builder.Build(t, observedResolverCC{ClientConn: cc, table: b.table}, opts)
}

// observedResolverCC hands the resolver's service configs to gRPC with their balancing
// config wrapped.
type observedResolverCC struct {
	resolver.ClientConn
	table *SubconnTable
}

func (cc observedResolverCC) ParseServiceConfig(js string) *serviceconfig.ParseResult {
	return cc.ClientConn.ParseServiceConfig(wrapBalancingConfig(js, cc.table.id))
}

// wrapBalancingConfig returns the service config js with its loadBalancingConfig wrapped in
// observedParent's for table, or js as it is if it has none or is not a JSON object (gRPC
// then reports what is wrong with it, as without prpc).
func wrapBalancingConfig(js string, table uint64) string {
	var sc map[string]json.RawMessage
	if err := json.Unmarshal([]byte(js), &sc); err != nil || len(sc["loadBalancingConfig"]) == 0 {
		return js
	}
	wrapper := []map[string]observedParentJSON{{observedParentName: {Table: table, ChildPolicy: sc["loadBalancingConfig"]}}}
	b, err := json.Marshal(wrapper)
	if err != nil {
		return js
	}
	sc["loadBalancingConfig"] = b
	out, err := json.Marshal(sc)
	if err != nil {
		return js
	}
	return string(out)
}

type observedParentJSON struct {
	Table       uint64          `json:"table"`
	ChildPolicy json.RawMessage `json:"childPolicy"`
}

// observedParentConfig is the parsed config of observedParent: the table, and the first
// balancer of the child policy that gRPC knows, with its parsed config.
type observedParentConfig struct {
	serviceconfig.LoadBalancingConfig
	table     uint64
	childName string
	child     serviceconfig.LoadBalancingConfig
}

type observedParentBuilder struct{}

func (observedParentBuilder) Name() string { return observedParentName }

func (observedParentBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	return &observedParent{cc: cc, opts: opts}
}

func (observedParentBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	var raw observedParentJSON
	if err := json.Unmarshal(js, &raw); err != nil {
		return nil, fmt.Errorf("prpc: %s config: %w", observedParentName, err)
	}
	var policies []map[string]json.RawMessage
	if err := json.Unmarshal(raw.ChildPolicy, &policies); err != nil {
		return nil, fmt.Errorf("prpc: %s config: loadBalancingConfig: %w", observedParentName, err)
	}
	for _, p := range policies {
		if len(p) != 1 {
			return nil, fmt.Errorf("prpc: %s config: a loadBalancingConfig entry names %d policies, not one", observedParentName, len(p))
		}
		for name, cfg := range p {
			b := balancer.Get(name)
			if b == nil {
				continue // gRPC takes the first policy it knows
			}
			c := &observedParentConfig{table: raw.Table, childName: name}
			if parser, ok := b.(balancer.ConfigParser); ok {
				child, err := parser.ParseConfig(cfg)
				if err != nil {
					return nil, err
				}
				c.child = child
			}
			return c, nil
		}
	}
	return nil, fmt.Errorf("prpc: %s config: no registered balancer in %s", observedParentName, raw.ChildPolicy)
}

// observedParent runs the resolver's balancer beneath an observedBalancer's ClientConn, so
// that the subchannels of every balancer below it are recorded in the reactor's table.
type observedParent struct {
	observedBalancer // child, table
	cc               balancer.ClientConn
	opts             balancer.BuildOptions
	childName        string
}

func (b *observedParent) UpdateClientConnState(s balancer.ClientConnState) error {
	c, ok := s.BalancerConfig.(*observedParentConfig)
	if !ok {
		return fmt.Errorf("prpc: %s: config of type %T", observedParentName, s.BalancerConfig)
	}
	if t, ok := subconnTables.Load(c.table); ok {
		b.table.Store(t.(*SubconnTable))
	}
	if b.child == nil || b.childName != c.childName {
		if b.child != nil {
			b.child.Close()
		}
		b.childName = c.childName
		b.child = balancer.Get(c.childName).Build(&observedCC{ClientConn: b.cc, b: &b.observedBalancer}, b.opts)
	}
	s.BalancerConfig = c.child
	return b.child.UpdateClientConnState(s)
}

func (b *observedParent) ResolverError(err error) {
	if b.child != nil {
		b.child.ResolverError(err)
	}
}

func (b *observedParent) UpdateSubConnState(sc balancer.SubConn, s balancer.SubConnState) {
	if b.child != nil {
		//lint:ignore SA1019 part of the Balancer interface; forwarded unchanged
		b.child.UpdateSubConnState(sc, s)
	}
}

func (b *observedParent) Close() {
	if b.child != nil {
		b.child.Close()
	}
}

func (b *observedParent) ExitIdle() {
	if b.child != nil {
		b.child.ExitIdle()
	}
}
