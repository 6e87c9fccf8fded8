package dial

import (
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/balancer"
	"google.golang.org/grpc/balancer/pickfirst"
	"google.golang.org/grpc/balancer/roundrobin"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/serviceconfig"
)

// prpc watches the connectivity of each backend through a thin wrapper around gRPC's own
// round_robin and pick_first balancers: gRPC tells a balancer the state of every subchannel
// (one connection to one backend address) and exposes it nowhere else. The wrapper changes
// nothing in how calls are balanced; it only copies each state change into the reactor's
// SubconnTable, found through an id in the balancer's config (SubconnTable.BalancingConfig).

// Names of the observing balancers, registered once per process.
const (
	observedRoundRobin = "prpc_observed_round_robin"
	observedPickFirst  = "prpc_observed_pick_first"
)

func init() {
	balancer.Register(observedBuilder{name: observedRoundRobin, child: roundrobin.Name})
	balancer.Register(observedBuilder{name: observedPickFirst, child: pickfirst.Name})
}

// observedBalancerName returns the observing wrapper of the named gRPC balancer.
func observedBalancerName(name string) string {
	if name == "round_robin" {
		return observedRoundRobin
	}
	return observedPickFirst
}

// subconnTables maps table ids, carried in balancer configs, to reactors' tables.
var (
	subconnTables sync.Map // uint64 → *SubconnTable
	nextTableID   atomic.Uint64
)

// SubconnTable holds the connectivity state, and health where checked, of each live
// subchannel of one connection. The zero table has id 0 and is registered nowhere, so no
// balancer reports to it.
type SubconnTable struct {
	id     uint64
	mu     sync.Mutex
	next   uint64
	states map[uint64]subconnState // by subchannel
}

type subconnState struct {
	addr        string
	state       connectivity.State
	health      connectivity.State
	healthKnown bool
}

func (t *SubconnTable) setHealth(id uint64, s connectivity.State) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.states[id]; ok {
		e.health, e.healthKnown = s, true
		t.states[id] = e
	}
}

// NewSubconnTable returns a table registered under a new id, for the balancers of one
// connection to report to. Release it once the connection is closed.
func NewSubconnTable() *SubconnTable {
	t := &SubconnTable{id: nextTableID.Add(1), states: make(map[uint64]subconnState)}
	subconnTables.Store(t.id, t)
	return t
}

// Release unregisters the table once its connection is closed.
func (t *SubconnTable) Release() { subconnTables.Delete(t.id) }

// BalancingConfig returns the loadBalancingConfig entry of a service config that runs gRPC's
// balancer name ("round_robin"; anything else: pick_first) wrapped to report the states of
// its subchannels to t.
func (t *SubconnTable) BalancingConfig(name string) map[string]any {
	return map[string]any{observedBalancerName(name): map[string]uint64{"table": t.id}} // observedConfig
}

func (t *SubconnTable) add(addr string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.next++
	t.states[t.next] = subconnState{addr: addr, state: connectivity.Idle}
	return t.next
}

func (t *SubconnTable) set(id uint64, s connectivity.State) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if s == connectivity.Shutdown {
		delete(t.states, id)
		return
	}
	if e, ok := t.states[id]; ok {
		e.state = s
		if s != connectivity.Ready {
			e.healthKnown = false
		}
		t.states[id] = e
	}
}

// ByAddr returns the best state of each address's live subchannels (Ready, then Connecting,
// Idle, TransientFailure).
func (t *SubconnTable) ByAddr() map[string]connectivity.State {
	rank := map[connectivity.State]int{connectivity.Ready: 4, connectivity.Connecting: 3, connectivity.Idle: 2, connectivity.TransientFailure: 1}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]connectivity.State, len(t.states))
	for _, e := range t.states {
		if e.state == connectivity.Ready && e.healthKnown {
			e.state = e.health
		}
		if cur, ok := out[e.addr]; !ok || rank[e.state] > rank[cur] {
			out[e.addr] = e.state
		}
	}
	return out
}

// Observed reports whether a balancer has reported a subchannel to t: only then does ByAddr
// list the addresses gRPC's balancer keeps a connection to, rather than nothing because no
// balancer reports (a service config that does not run prpc's wrappers).
func (t *SubconnTable) Observed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.next > 0
}

type observedConfig struct {
	serviceconfig.LoadBalancingConfig
	Table uint64 `json:"table"`
}

type observedBuilder struct{ name, child string }

func (b observedBuilder) Name() string { return b.name }

func (b observedBuilder) Build(cc balancer.ClientConn, opts balancer.BuildOptions) balancer.Balancer {
	ob := &observedBalancer{}
	ob.child = balancer.Get(b.child).Build(&observedCC{ClientConn: cc, b: ob}, opts)
	return ob
}

func (b observedBuilder) ParseConfig(js json.RawMessage) (serviceconfig.LoadBalancingConfig, error) {
	c := &observedConfig{}
	if err := json.Unmarshal(js, c); err != nil {
		return nil, fmt.Errorf("prpc: %s config: %w", b.name, err)
	}
	return c, nil
}

// observedBalancer forwards everything to the gRPC balancer it wraps.
type observedBalancer struct {
	child balancer.Balancer
	table atomic.Pointer[SubconnTable]
}

func (b *observedBalancer) UpdateClientConnState(s balancer.ClientConnState) error {
	if c, ok := s.BalancerConfig.(*observedConfig); ok {
		if t, ok := subconnTables.Load(c.Table); ok {
			b.table.Store(t.(*SubconnTable))
		}
	}
	s.BalancerConfig = nil // the wrapped balancers run with their default config
	return b.child.UpdateClientConnState(s)
}

func (b *observedBalancer) ResolverError(err error) { b.child.ResolverError(err) }

func (b *observedBalancer) UpdateSubConnState(sc balancer.SubConn, s balancer.SubConnState) {
	//lint:ignore SA1019 part of the Balancer interface; forwarded unchanged
	b.child.UpdateSubConnState(sc, s)
}

func (b *observedBalancer) Close()    { b.child.Close() }
func (b *observedBalancer) ExitIdle() { b.child.ExitIdle() }

// observedCC records the state of every subchannel the wrapped balancer creates.
type observedCC struct {
	balancer.ClientConn
	b *observedBalancer
}

func (cc *observedCC) NewSubConn(addrs []resolver.Address, opts balancer.NewSubConnOptions) (balancer.SubConn, error) {
	t := cc.b.table.Load()
	if t == nil || len(addrs) == 0 {
		//lint:ignore SA1019 this is the wrapped balancer's own call, passed through
		return cc.ClientConn.NewSubConn(addrs, opts)
	}
	id := t.add(addrs[0].Addr)
	listener := opts.StateListener
	opts.StateListener = func(s balancer.SubConnState) {
		t.set(id, s.ConnectivityState)
		if listener != nil {
			listener(s)
		}
	}
	//lint:ignore SA1019 this is the wrapped balancer's own call, passed through
	sc, err := cc.ClientConn.NewSubConn(addrs, opts)
	if err != nil {
		t.set(id, connectivity.Shutdown)
		return nil, err
	}
	return &observedSubConn{SubConn: sc, t: t, id: id, addr: addrs[0].Addr}, nil
}

// PickedKey is the context key of the *Pick in which the picker records the address of the
// backend it picked for a call, as the resolver gave it; calls are counted under that name, the
// same as the backend's state, rather than under the peer's resolved address.
type PickedKey struct{}

// Pick is a transport call's slot for the picker (PickedKey).
type Pick struct {
	// Addr is the address of the backend picked, set by the picker.
	Addr string
	// Tried, if not nil, holds the backends the call's earlier attempts went to (a hedged
	// call): the picker avoids them where it can, and adds the one it picks.
	Tried *TriedBackends
}

// TriedBackends are the backends the attempts of one hedged call went to. Its attempts' picks
// read and add to it from their lanes.
type TriedBackends struct {
	mu    sync.Mutex
	addrs []string
}

// has reports whether addr is among t's backends.
func (t *TriedBackends) has(addr string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, a := range t.addrs {
		if a == addr {
			return true
		}
	}
	return false
}

// add adds addr to t's backends.
func (t *TriedBackends) add(addr string) {
	t.mu.Lock()
	t.addrs = append(t.addrs, addr)
	t.mu.Unlock()
}

// maxRepicks bounds the picks the picker makes to avoid backends tried already: one per
// earlier attempt of a call, at most.
const maxRepicks = 4

// observedSubConn wraps a subchannel so that its health (grpc.health.v1, which pick_first
// learns through RegisterHealthListener) shows in the table too: a connected backend that
// reports NOT_SERVING gets no calls, and the reactor's Stats says so.
type observedSubConn struct {
	balancer.SubConn
	t    *SubconnTable
	id   uint64
	addr string
}

// RegisterHealthListener records health updates before passing them on.
func (sc *observedSubConn) RegisterHealthListener(l func(balancer.SubConnState)) {
	sc.SubConn.RegisterHealthListener(func(s balancer.SubConnState) {
		sc.t.setHealth(sc.id, s.ConnectivityState)
		l(s)
	})
}

// UpdateState wraps the balancer's picker so that gRPC gets back its own subchannels.
func (cc *observedCC) UpdateState(s balancer.State) {
	if s.Picker != nil {
		s.Picker = unwrappingPicker{s.Picker}
	}
	cc.ClientConn.UpdateState(s)
}

// unwrappingPicker unwraps the subchannel it picks and records its address for the call. For
// an attempt of a hedged call it asks the wrapped picker again, a few times at most, while
// it returns a backend an earlier attempt went to: round_robin's picker returns the next
// ready backend each time, pick_first's the same one, which is then taken. A pick that
// carries a Done callback (a balancer that counts its picks) is taken as it is.
type unwrappingPicker struct{ balancer.Picker }

func (p unwrappingPicker) Pick(info balancer.PickInfo) (balancer.PickResult, error) {
	slot, _ := info.Ctx.Value(PickedKey{}).(*Pick)
	pr, err := p.Picker.Pick(info)
	osc, ok := pr.SubConn.(*observedSubConn)
	if !ok {
		return pr, err
	}
	if slot != nil && slot.Tried != nil {
		first := pr
		for range maxRepicks {
			if !slot.Tried.has(osc.addr) || pr.Done != nil {
				break
			}
			next, err := p.Picker.Pick(info)
			nsc, ok := next.SubConn.(*observedSubConn)
			if err != nil || !ok || nsc == first.SubConn {
				break // no other backend to pick
			}
			pr, osc = next, nsc
		}
		slot.Tried.add(osc.addr)
	}
	pr.SubConn = osc.SubConn
	if slot != nil {
		slot.Addr = osc.addr
	}
	return pr, err
}
