package reactor

import (
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// BackendStats counts the transport calls that reached one backend, by the address gRPC
// reports for it (grpc.Peer). With several backends (Config.Targets, or a Target that
// resolves to several addresses) it shows how calls spread and which backend fails.
type BackendStats struct {
	// Addr is the backend's address, as gRPC's peer reports it ("127.0.0.1:50051").
	Addr string
	// Calls counts transport calls that got a connection to the backend, including those
	// that failed there and those the reactor had already given up on.
	Calls uint64
	// Failed counts those calls that failed, by code.
	Failed map[codes.Code]uint64
}

// maxBackendNames bounds the cache of address strings: a long-running reactor sees a new
// address value per reconnect.
const maxBackendNames = 1024

// backendTable is written by the reactor goroutine as transport calls complete and read by
// Stats.
type backendTable struct {
	mu     sync.Mutex
	byAddr map[string]*BackendStats
	names  map[net.Addr]string // address values to strings, to avoid a String() per call
}

func (t *backendTable) record(addr net.Addr, err error) {
	if addr == nil {
		return // the call never got a connection
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	name := t.name(addr)
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

// snapshot returns the backends sorted by address.
func (t *backendTable) snapshot() []BackendStats {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]BackendStats, 0, len(t.byAddr))
	for _, b := range t.byAddr {
		c := *b
		c.Failed = make(map[codes.Code]uint64, len(b.Failed))
		for code, n := range b.Failed {
			c.Failed[code] = n
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b BackendStats) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}
