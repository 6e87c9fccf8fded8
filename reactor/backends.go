package reactor

import (
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// BackendStats describes one backend address: its connectivity, and the transport calls that
// reached it. With several backends (Config.Targets, or a Target that resolves to several
// addresses) it shows how calls spread and which backend is down or failing.
type BackendStats struct {
	// Addr is the backend's address ("127.0.0.1:50051").
	Addr string
	// State is the connectivity of the backend's connection as gRPC's balancer sees it, if
	// StateKnown: it is known for the backends of a connection prpc dialled with the service
	// config it generates, and under an xDS Target's (see Config.Target) with the resolver
	// registered for its scheme, while gRPC keeps a connection to the address; it is not
	// with Config.ServiceConfig, Config.Conn, another service config from the resolver, or an
	// xDS resolver passed in Config.DialOptions: gRPC shows connectivity only to balancers.
	State      connectivity.State
	StateKnown bool
	// Calls counts transport calls that got a connection to the backend, including those
	// that failed there and those the reactor had already given up on.
	Calls uint64
	// Failed counts those calls that failed, by code.
	Failed map[codes.Code]uint64
	// HedgesLost counts those calls that were attempts of a hedged call (MethodPolicy.Hedge)
	// which prpc cancelled because another attempt had answered first: load the backend
	// carried, never counted in Failed, since the backend did not fail them.
	HedgesLost uint64
}

// maxBackendNames bounds the cache of address strings: a long-running reactor sees a new
// address value per reconnect.
const maxBackendNames = 1024

// backendTable is written by the invoker lanes as transport calls complete and read by
// Stats. A lane finds its backend's counters through its backendCache, without the lock, and
// counts a call by one atomic add; the lock guards the table and the failure counts.
type backendTable struct {
	mu     sync.Mutex
	byAddr map[string]*backendCounts
	names  map[net.Addr]string // address values to strings, to avoid a String() per call
}

// backendCounts counts the transport calls of one backend address.
type backendCounts struct {
	addr       string
	calls      atomic.Uint64
	hedgesLost atomic.Uint64
	failed     map[codes.Code]uint64 // under backendTable.mu
}

// backendCache is one lane's memory of the backend its last transport call reached: the
// address value gRPC reported, the name the balancer picked it by, and its counters. A
// connection reports the same address value for every call, so a lane finds its counters by
// one comparison. Only addresses of a comparable type are kept.
type backendCache struct {
	addr   net.Addr
	picked string
	counts *backendCounts
}

// record counts a transport call that reached addr (nil if it never got a connection), which
// the balancer picked by the name picked ("" if not named), and its failure, if err is not
// nil. The calls are counted before the failure, so that a Stats reader never sees more
// failures than calls.
func (t *backendTable) record(cache *backendCache, addr net.Addr, picked string, err error) {
	if addr == nil {
		return // the call never got a connection
	}
	b := cache.counts
	if b == nil || cache.addr != addr || cache.picked != picked {
		b = t.counts(cache, addr, picked)
	}
	b.calls.Add(1)
	if err != nil {
		t.mu.Lock()
		b.failed[status.Code(err)]++
		t.mu.Unlock()
	}
}

// recordLost counts a transport call that reached addr (nil if it never got a connection), as
// record does, that was an attempt of a hedged call which lost to another attempt.
func (t *backendTable) recordLost(cache *backendCache, addr net.Addr, picked string) {
	if addr == nil {
		return
	}
	b := cache.counts
	if b == nil || cache.addr != addr || cache.picked != picked {
		b = t.counts(cache, addr, picked)
	}
	b.hedgesLost.Add(1)
	b.calls.Add(1)
}

// counts returns the counters of addr, picked by the name picked, making them if need be,
// and keeps them in cache if addr's type is comparable (the cache compares with ==).
func (t *backendTable) counts(cache *backendCache, addr net.Addr, picked string) *backendCounts {
	comparable := reflect.TypeOf(addr).Comparable()
	t.mu.Lock()
	defer t.mu.Unlock()
	name := picked
	if name == "" {
		name = t.name(addr, comparable)
	}
	b := t.byAddr[name]
	if b == nil {
		if t.byAddr == nil {
			t.byAddr = make(map[string]*backendCounts)
		}
		b = &backendCounts{addr: name, failed: make(map[codes.Code]uint64)}
		t.byAddr[name] = b
	}
	*cache = backendCache{}
	if comparable {
		*cache = backendCache{addr: addr, picked: picked, counts: b}
	}
	return b
}

// name returns addr's string, from the cache of names if addr's type is comparable; with mu
// held.
func (t *backendTable) name(addr net.Addr, comparable bool) string {
	if !comparable {
		return addr.String()
	}
	if n, ok := t.names[addr]; ok {
		return n
	}
	if t.names == nil || len(t.names) >= maxBackendNames {
		t.names = make(map[net.Addr]string)
	}
	n := addr.String()
	t.names[addr] = n
	return n
}

// snapshot returns the backends sorted by address, with the connectivity states in states.
func (t *backendTable) snapshot(states map[string]connectivity.State) []BackendStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]BackendStats, 0, len(t.byAddr))
	for _, b := range t.byAddr {
		c := BackendStats{Addr: b.addr, Failed: make(map[codes.Code]uint64, len(b.failed))}
		for code, n := range b.failed {
			c.Failed[code] = n
		}
		c.HedgesLost = b.hedgesLost.Load()
		c.Calls = b.calls.Load() // after the failures and losses: never fewer calls than those
		c.State, c.StateKnown = states[c.Addr]
		out = append(out, c)
	}
	for addr, s := range states {
		if t.byAddr[addr] == nil {
			out = append(out, BackendStats{Addr: addr, State: s, StateKnown: true, Failed: map[codes.Code]uint64{}})
		}
	}
	slices.SortFunc(out, func(a, b BackendStats) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}
