package reactor

import (
	"cmp"
	"net"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// BackendStats describes one backend address: its connectivity, and the transport calls that
// reached it. With several backends (Config.Targets, or a Target that resolves to several
// addresses) it shows how calls spread and which backend is down or failing.
//
// A backend's row does not last for ever: see Stats.Backends for when it is removed, and
// RemovedBackendsAddr for the row that keeps the counts of removed rows.
type BackendStats struct {
	// Addr is the backend's address ("127.0.0.1:50051"), or RemovedBackendsAddr.
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
	// which prpc cancelled because another attempt had decided the call first (as
	// MethodStats.HedgesLost says): load the backend carried, never counted in Failed, since
	// the backend did not fail them.
	HedgesLost uint64
}

// RemovedBackendsAddr is the Addr of the row of Stats.Backends that holds the counts of every
// backend row removed so far (see Stats.Backends): its Calls, Failed and HedgesLost are their sums, and
// its state is never known. The row appears with the first removal and stays from then on,
// so that the sums of Calls and of Failed over Stats.Backends never decrease. It is not of
// the form host:port, so it is not taken for a backend's address.
const RemovedBackendsAddr = "(removed)"

// backendIdleGrace is how long a backend's row outlives its last transport call before it
// may be removed. Long enough that a backend which is only quiet, or which the balancer
// drops for a moment (a reconnect, a re-resolution that misses it, a deploy that brings it
// back), keeps its row and its counts, and that a metrics scrape sees a row's last counts
// under its address; short enough that a mesh whose endpoints change on every deploy keeps
// the rows of a few minutes' addresses, not of the process's life. The godoc of
// Stats.Backends states it.
const backendIdleGrace = 5 * time.Minute

// backendRowsKept is how many rows the table keeps, idle or not, where prpc does not see
// which addresses the balancer connects to (Config.Conn, Config.ServiceConfig): a backend
// there may be idle but still listed, so idle rows go only beyond this many, the longest
// idle first. It is far above the backends of one service that a game server calls, so only
// a table that keeps growing loses rows. The godoc of Stats.Backends states it.
const backendRowsKept = 64

// maxBackendNames bounds the cache of address strings: a long-running reactor sees a new
// address value per reconnect.
const maxBackendNames = 1024

// backendTable is written by the invoker lanes as transport calls complete and read by
// Stats. A lane finds its backend's counters through its backendCache, without the lock, and
// counts a call by one atomic add; the lock guards the table and the failure counts.
//
// The table removes the rows of backends gone idle (prune), folding their counts into
// removed. It does so when Stats reads it and when a lane adds a row, which is the only way
// it grows; a lane that still caches a removed row learns of the removal from the atomic add
// it counts by (removedBit), so the hot path costs what it did without removal.
type backendTable struct {
	mu      sync.Mutex
	byAddr  map[string]*backendCounts
	names   map[net.Addr]string // address values to strings, to avoid a String() per call
	removed backendCounts       // the sums of the rows removed; its calls under mu too
	folded  bool                // a row was removed: removed is a row of the snapshot

	// now reads the reactor's clock, in nanoseconds since its epoch; nil in a table that
	// never removes rows (tests of counting alone).
	now func() int64
	// listed returns the connectivity of the addresses gRPC's balancer keeps a connection
	// to, and whether the balancer reports them at all; nil with Config.Conn.
	listed func() (states map[string]connectivity.State, known bool)
}

// removedBit is set in a row's calls when the row is removed from the table (see
// backendCounts.calls).
const removedBit = 1 << 63

// backendCounts counts the transport calls of one backend address.
type backendCounts struct {
	addr string
	// calls counts the row's calls in its low 63 bits. Removal sets removedBit, by the same
	// atomic operation that reads the count it folds: a lane's add that returns the bit set
	// counted a call after the removal, which the lane counts again in a live row, and one
	// that returns it clear was folded with the row. No call is lost or counted twice.
	calls      atomic.Uint64
	failed     map[codes.Code]uint64 // under backendTable.mu
	hedgesLost uint64                // under backendTable.mu

	// Under backendTable.mu: the calls the last pruning pass found, and the clock's time of
	// the last pass that found them changed (or of the row's making). A pass that finds the
	// calls still equal to seen knows the row has had no call since active, without the
	// lanes reading the clock.
	seen   uint64
	active int64
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
// nil, or, if lost is set, that it was an attempt of a hedged call which lost to another
// attempt (not a failure, whatever err says). The calls are counted before the failures and
// losses, so that a Stats reader never sees more of those than calls.
func (t *backendTable) record(cache *backendCache, addr net.Addr, picked string, err error, lost bool) {
	if addr == nil {
		return // the call never got a connection
	}
	b := cache.counts
	if b == nil || cache.addr != addr || cache.picked != picked {
		b = t.counts(cache, addr, picked)
	}
	for b.calls.Add(1)&removedBit != 0 {
		// b was removed before the call was counted (the lane cached it): the call counts
		// in the address's live row, made anew if need be.
		b = t.counts(cache, addr, picked)
	}
	if err != nil || lost {
		t.mu.Lock()
		if b.calls.Load()&removedBit != 0 {
			b = &t.removed // removed since: the call was folded into removed with b's counts
		}
		if lost {
			b.hedgesLost++
		} else {
			b.failed[status.Code(err)]++
		}
		t.mu.Unlock()
	}
}

// counts returns the counters of addr, picked by the name picked, making them if need be,
// and keeps them in cache if addr's type is comparable (the cache compares with ==). A lane
// that makes a row prunes the table.
func (t *backendTable) counts(cache *backendCache, addr net.Addr, picked string) *backendCounts {
	comparable := reflect.TypeOf(addr).Comparable()
	t.mu.Lock()
	name := picked
	if name == "" {
		name = t.name(addr, comparable)
	}
	b := t.byAddr[name]
	made := b == nil
	if made {
		if t.byAddr == nil {
			t.byAddr = make(map[string]*backendCounts)
		}
		b = &backendCounts{addr: name, failed: make(map[codes.Code]uint64)}
		if t.now != nil {
			b.active = t.now()
		}
		t.byAddr[name] = b
	}
	*cache = backendCache{}
	if comparable {
		*cache = backendCache{addr: addr, picked: picked, counts: b}
	}
	t.mu.Unlock()
	if made {
		t.prune() // b is not idle: it stays
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

// connectivity returns the states of the addresses the balancer keeps a connection to, and
// whether it reports them.
func (t *backendTable) connectivity() (map[string]connectivity.State, bool) {
	if t.listed == nil {
		return nil, false
	}
	return t.listed()
}

// prune removes the rows idle for backendIdleGrace whose address the balancer keeps no
// connection to, where it reports them; elsewhere, the rows idle that long beyond
// backendRowsKept, the longest idle first.
func (t *backendTable) prune() {
	if t.now == nil {
		return
	}
	states, known := t.connectivity()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.pruneLocked(t.now(), states, known)
}

// pruneLocked is prune at the clock's time now, with mu held.
func (t *backendTable) pruneLocked(now int64, states map[string]connectivity.State, known bool) {
	var idle []*backendCounts
	for name, b := range t.byAddr {
		if c := b.calls.Load(); c != b.seen {
			b.seen, b.active = c, now
			continue
		}
		if now-b.active < int64(backendIdleGrace) {
			continue
		}
		if !known {
			idle = append(idle, b)
		} else if _, ok := states[name]; !ok {
			t.remove(b)
		}
	}
	if len(t.byAddr) <= backendRowsKept {
		return
	}
	slices.SortFunc(idle, func(a, b *backendCounts) int {
		return cmp.Or(cmp.Compare(a.active, b.active), strings.Compare(a.addr, b.addr))
	})
	for _, b := range idle {
		if len(t.byAddr) <= backendRowsKept {
			break
		}
		t.remove(b)
	}
}

// remove takes b out of the table and adds its counts to removed's, with mu held. Setting
// removedBit reads the calls to fold in the same atomic step, so a lane's later add sees it.
func (t *backendTable) remove(b *backendCounts) {
	if !t.folded {
		t.removed.addr, t.removed.failed = RemovedBackendsAddr, make(map[codes.Code]uint64)
	}
	t.removed.calls.Add(b.calls.Or(removedBit) &^ removedBit)
	for code, n := range b.failed {
		t.removed.failed[code] += n
	}
	t.removed.hedgesLost += b.hedgesLost
	t.folded = true
	delete(t.byAddr, b.addr)
}

// snapshot prunes the table and returns the backends sorted by address, with their
// connectivity states.
func (t *backendTable) snapshot() []BackendStats {
	states, known := t.connectivity()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.now != nil {
		t.pruneLocked(t.now(), states, known)
	}
	out := make([]BackendStats, 0, len(t.byAddr)+1)
	row := func(b *backendCounts) BackendStats {
		c := BackendStats{Addr: b.addr, Failed: make(map[codes.Code]uint64, len(b.failed))}
		for code, n := range b.failed {
			c.Failed[code] = n
		}
		c.HedgesLost = b.hedgesLost
		c.Calls = b.calls.Load() // after the failures and losses: never fewer calls than those
		return c
	}
	for _, b := range t.byAddr {
		c := row(b)
		c.State, c.StateKnown = states[c.Addr]
		out = append(out, c)
	}
	if t.folded {
		out = append(out, row(&t.removed))
	}
	for addr, s := range states {
		if t.byAddr[addr] == nil {
			out = append(out, BackendStats{Addr: addr, State: s, StateKnown: true, Failed: map[codes.Code]uint64{}})
		}
	}
	slices.SortFunc(out, func(a, b BackendStats) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}
