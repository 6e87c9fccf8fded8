package reactor

import (
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"

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
}

// maxBackendNames bounds the cache of address strings: a long-running reactor sees a new
// address value per reconnect.
const maxBackendNames = 1024

// backendTable is written by the invoker lanes as transport calls complete and read by
// Stats.
type backendTable struct {
	mu     sync.Mutex
	byAddr map[string]*BackendStats
	names  map[net.Addr]string // address values to strings, to avoid a String() per call
}

func (t *backendTable) record(addr net.Addr, picked string, err error) {
	if addr == nil {
		return // the call never got a connection
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name := picked
	if name == "" {
		name = t.name(addr)
	}
	b := t.byAddr[name]
	if b == nil {
		if t.byAddr == nil {
			t.byAddr = make(map[string]*BackendStats)
		}
		b = &BackendStats{Addr: name, Failed: make(map[codes.Code]uint64)}
		t.byAddr[name] = b
	}
	b.Calls++
	if err != nil {
		b.Failed[status.Code(err)]++
	}
}

func (t *backendTable) name(addr net.Addr) string {
	if !reflect.TypeOf(addr).Comparable() {
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
		c := *b
		c.Failed = make(map[codes.Code]uint64, len(b.Failed))
		for code, n := range b.Failed {
			c.Failed[code] = n
		}
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
