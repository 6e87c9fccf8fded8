package reactor

import (
	"fmt"
	"maps"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
)

// sliceAddr is a net.Addr whose type is not comparable: == on two of them panics.
type sliceAddr []string

func (a sliceAddr) Network() string { return "test" }
func (a sliceAddr) String() string  { return a[0] }

// TestBackendTableCounts checks the per-backend counts lanes keep through their caches: calls
// and failures by address, a name the balancer picked winning over the address, a lane that
// moves to another backend counting there, and addresses whose type is not comparable counted
// by their string without being cached.
func TestBackendTableCounts(t *testing.T) {
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	b := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}
	odd := sliceAddr{"odd:3"}
	unavailable := status.Error(codes.Unavailable, "down")
	tests := []struct {
		name   string
		addr   net.Addr
		picked string
		err    error
	}{
		{"first call to a", a, "", nil},
		{"a again, from the cache", a, "", nil},
		{"a fails", a, "", unavailable},
		{"b", b, "", nil},
		{"back to a", a, "", unavailable},
		{"a by a picked name", a, "backend-a", nil},
		{"a not comparable", odd, "", nil},
		{"again", odd, "", unavailable},
		{"no connection: not counted", nil, "", unavailable},
	}
	var table backendTable
	var lane1, lane2 backendCache
	for i, tc := range tests {
		cache := &lane1
		if i%2 == 1 {
			cache = &lane2
		}
		require.NotPanics(t, func() { table.record(cache, tc.addr, tc.picked, tc.err, false) }, tc.name)
	}
	require.Nil(t, lane1.addr, "an address of a type that is not comparable is not cached")
	got := map[string]BackendStats{}
	for _, s := range table.snapshot() {
		got[s.Addr] = s
	}
	require.Len(t, got, 4)
	require.Equal(t, uint64(4), got[a.String()].Calls)
	require.Equal(t, map[codes.Code]uint64{codes.Unavailable: 2}, got[a.String()].Failed)
	require.Equal(t, uint64(1), got[b.String()].Calls)
	require.Empty(t, got[b.String()].Failed)
	require.Equal(t, uint64(1), got["backend-a"].Calls)
	require.Equal(t, uint64(2), got["odd:3"].Calls)
	require.Equal(t, map[codes.Code]uint64{codes.Unavailable: 1}, got["odd:3"].Failed)
}

// nameAddr is a comparable net.Addr whose string is itself.
type nameAddr string

func (a nameAddr) Network() string { return "test" }
func (a nameAddr) String() string  { return string(a) }

// pruneWorld is a backendTable on a clock and a balancer that the test sets.
type pruneWorld struct {
	table  backendTable
	clock  atomic.Int64
	mu     sync.Mutex
	known  bool
	listed map[string]bool
}

func newPruneWorld(known bool, listed ...string) *pruneWorld {
	w := &pruneWorld{known: known}
	w.table.now = w.clock.Load
	w.table.listed = func() (map[string]connectivity.State, bool) {
		w.mu.Lock()
		defer w.mu.Unlock()
		states := map[string]connectivity.State{}
		for a := range w.listed {
			states[a] = connectivity.Ready
		}
		return states, w.known
	}
	w.list(listed...)
	return w
}

// list makes addrs the addresses the balancer keeps a connection to.
func (w *pruneWorld) list(addrs ...string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.listed = map[string]bool{}
	for _, a := range addrs {
		w.listed[a] = true
	}
}

// rows returns the snapshot's rows with counts (not those of listed addresses alone) by
// address, checking that no row has more failures than calls.
func (w *pruneWorld) rows(t *testing.T) map[string]BackendStats {
	t.Helper()
	out := map[string]BackendStats{}
	for _, s := range w.table.snapshot() {
		failed := uint64(0)
		for _, n := range s.Failed {
			failed += n
		}
		require.LessOrEqual(t, failed, s.Calls, "row %s has more failures than calls", s.Addr)
		if s.Calls > 0 || s.Addr == RemovedBackendsAddr {
			out[s.Addr] = s
		}
	}
	return out
}

// totals returns the sums of Calls and of Failed over rows.
func totals(rows map[string]BackendStats) (calls, failed, lost uint64) {
	for _, s := range rows {
		calls += s.Calls
		lost += s.HedgesLost
		for _, n := range s.Failed {
			failed += n
		}
	}
	return calls, failed, lost
}

func backendName(i int) string { return fmt.Sprintf("backend-%03d:50051", i) }

// TestBackendTablePrune checks which rows a pruning pass removes: with the balancer's
// connections known, the rows idle for backendIdleGrace whose address it no longer connects
// to; without, the rows idle that long beyond backendRowsKept, the longest idle first. Every
// row gets one call at time 0 (the odd rows' calls fail), the rows of later get one more call
// then, and Stats is read after each round of calls (a pruning pass, which sees the calls).
// A removed row's counts move to the RemovedBackendsAddr row: the sums never change.
func TestBackendTablePrune(t *testing.T) {
	const grace = backendIdleGrace
	indexes := func(from, to int) []int { // from..to-1
		var out []int
		for i := from; i < to; i++ {
			out = append(out, i)
		}
		return out
	}
	tests := []struct {
		name    string
		known   bool
		rows    int
		listed  []int                   // rows whose address the balancer connects to, if known
		later   map[time.Duration][]int // rows called again at these times
		at      time.Duration           // when Stats is read at last
		removed []int
	}{
		{name: "known: unlisted within the grace", known: true, rows: 3, listed: []int{0}, at: grace - 1},
		{name: "known: unlisted after the grace", known: true, rows: 3, listed: []int{0}, at: grace, removed: []int{1, 2}},
		{name: "known: a later call restarts the grace", known: true, rows: 3, listed: []int{0}, later: map[time.Duration][]int{grace / 2: {2}}, at: grace, removed: []int{1}},
		{name: "known: the later call's grace ends", known: true, rows: 3, listed: []int{0}, later: map[time.Duration][]int{grace / 2: {2}}, at: grace/2 + grace, removed: []int{1, 2}},
		{name: "known: listed rows stay however idle", known: true, rows: 3, listed: []int{0, 1, 2}, at: 100 * grace},
		{name: "known: nothing listed (an idle channel)", known: true, rows: 3, at: grace, removed: []int{0, 1, 2}},
		{name: "known: many rows, all listed", known: true, rows: backendRowsKept + 10, listed: indexes(0, backendRowsKept+10), at: grace},
		{name: "unknown: few rows stay however idle", rows: 3, at: 100 * grace},
		{name: "unknown: beyond the cap, within the grace", rows: backendRowsKept + 2, at: grace - 1},
		{name: "unknown: beyond the cap, longest idle first", rows: backendRowsKept + 2, later: map[time.Duration][]int{grace / 2: {0, 1}}, at: grace, removed: []int{2, 3}},
		{name: "unknown: beyond the cap, the idle ones only", rows: backendRowsKept + 6, later: map[time.Duration][]int{grace / 4: {0, 1}, grace / 2: indexes(2, backendRowsKept+4)}, at: grace, removed: []int{backendRowsKept + 4, backendRowsKept + 5}},
		{name: "unknown: beyond the cap, ties by address", rows: backendRowsKept + 3, later: map[time.Duration][]int{grace / 2: {1}}, at: grace, removed: []int{0, 2, 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var listed []string
			for _, i := range tc.listed {
				listed = append(listed, backendName(i))
			}
			w := newPruneWorld(tc.known, listed...)
			var lane backendCache
			calls := make([]uint64, tc.rows)
			failed := make([]uint64, tc.rows)
			call := func(i int) {
				var err error
				if i%2 == 1 {
					err = status.Error(codes.Unavailable, "down")
					failed[i]++
				}
				w.table.record(&lane, nameAddr(backendName(i)), "", err, false)
				calls[i]++
			}
			for i := range tc.rows {
				call(i)
			}
			w.rows(t)
			for _, at := range slices.Sorted(maps.Keys(tc.later)) {
				w.clock.Store(int64(at))
				for _, i := range tc.later[at] {
					call(i)
				}
				w.rows(t)
			}
			w.clock.Store(int64(tc.at))
			rows := w.rows(t)

			var wantRemoved BackendStats
			for i := range tc.rows {
				s, ok := rows[backendName(i)]
				if !slices.Contains(tc.removed, i) {
					require.True(t, ok, "row %d was removed", i)
					require.Equal(t, calls[i], s.Calls, "row %d", i)
					continue
				}
				require.False(t, ok, "row %d was not removed", i)
				wantRemoved.Calls += calls[i]
				if failed[i] > 0 {
					if wantRemoved.Failed == nil {
						wantRemoved.Failed = map[codes.Code]uint64{}
					}
					wantRemoved.Failed[codes.Unavailable] += failed[i]
				}
			}
			r, ok := rows[RemovedBackendsAddr]
			if len(tc.removed) == 0 {
				require.False(t, ok, "a row of removed backends without a removal")
				require.Len(t, rows, tc.rows)
				return
			}
			require.True(t, ok, "no row of removed backends")
			require.Equal(t, wantRemoved.Calls, r.Calls)
			if wantRemoved.Failed == nil {
				require.Empty(t, r.Failed)
			} else {
				require.Equal(t, wantRemoved.Failed, r.Failed)
			}
			require.False(t, r.StateKnown)
			require.Len(t, rows, tc.rows-len(tc.removed)+1)
			var sumCalls, sumFailed uint64
			for i := range tc.rows {
				sumCalls, sumFailed = sumCalls+calls[i], sumFailed+failed[i]
			}
			gotCalls, gotFailed, _ := totals(rows)
			require.Equal(t, sumCalls, gotCalls, "the sum of Calls")
			require.Equal(t, sumFailed, gotFailed, "the sum of Failed")
		})
	}
}

// TestBackendTableRemovedRowCached checks a lane whose cached row was removed: its next
// call, succeeded or failed, counts in a new row of the address (counting from zero), the
// removed row keeps the earlier counts, and the lane then caches the new row. A row is also
// removed when a lane makes another, without Stats being read.
func TestBackendTableRemovedRowCached(t *testing.T) {
	for _, fail := range []bool{false, true} {
		t.Run(fmt.Sprintf("failed=%v", fail), func(t *testing.T) {
			w := newPruneWorld(true)
			var lane, other backendCache
			a := nameAddr("a:1")
			for range 3 {
				w.table.record(&lane, a, "", nil, false)
			}
			old := lane.counts
			require.NotNil(t, old)
			w.rows(t) // a pass sees a's calls at time 0
			w.clock.Store(int64(backendIdleGrace))
			w.table.record(&other, nameAddr("b:1"), "", nil, false) // a new row: prunes a
			require.NotZero(t, old.calls.Load()&removedBit, "a's row was not removed")
			require.Same(t, old, lane.counts, "the lane still caches a's removed row")

			var err error
			if fail {
				err = status.Error(codes.Internal, "boom")
			}
			w.table.record(&lane, a, "", err, false)
			require.NotSame(t, old, lane.counts, "the lane still caches the removed row")
			rows := w.rows(t)
			require.Equal(t, uint64(1), rows["a:1"].Calls, "the new row of a")
			require.Equal(t, uint64(3), rows[RemovedBackendsAddr].Calls)
			require.Empty(t, rows[RemovedBackendsAddr].Failed)
			if fail {
				require.Equal(t, map[codes.Code]uint64{codes.Internal: 1}, rows["a:1"].Failed)
			} else {
				require.Empty(t, rows["a:1"].Failed)
			}
			w.table.record(&lane, a, "", nil, false)
			require.Equal(t, uint64(2), w.rows(t)["a:1"].Calls, "from the lane's new cache")
		})
	}
}

// TestBackendTableRemovedRace has lanes count calls, a third of them failed and a fifth hedges
// lost, to backends that
// the balancer keeps dropping and listing again while Stats is read and the clock moves past
// the grace before each read: no call and no failure is lost or counted twice, no row ever
// shows more failures than calls, and the sums never decrease from one read to the next. The
// lanes call each backend for a run of calls, so that most are counted through their caches,
// and run from before the first read until after the last. Run it under -race.
func TestBackendTableRemovedRace(t *testing.T) {
	const lanes, addrs, run, reads = 4, 3, 50, 300
	w := newPruneWorld(true)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var counted, failures, losses [lanes]uint64
	var progress atomic.Int64 // calls the lanes have counted, for the reads to wait on
	for l := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var cache backendCache
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				var err error
				lost := i%5 == 1
				switch {
				case lost:
					err = status.Error(codes.Canceled, "another attempt answered first")
					losses[l]++
				case i%3 == 0:
					err = status.Error(codes.Unavailable, "down")
					failures[l]++
				}
				w.table.record(&cache, nameAddr(backendName((l+i/run)%addrs)), "", err, lost)
				counted[l]++
				progress.Add(1)
			}
		}()
	}
	var lastCalls, lastFailed, lastLost uint64
	for n := range reads {
		// Each read waits for the lanes to count a call since the last, so that the reads
		// interleave with them however fast the reads are (without -race, they could all run
		// before a lane starts).
		for seen := progress.Load(); progress.Load() == seen; {
			runtime.Gosched()
		}
		if n%2 == 0 {
			w.list()
		} else {
			w.list(backendName(0))
		}
		w.clock.Add(int64(backendIdleGrace))
		calls, failed, lost := totals(w.rows(t))
		require.GreaterOrEqual(t, calls, lastCalls, "the sum of Calls decreased")
		require.GreaterOrEqual(t, failed, lastFailed, "the sum of Failed decreased")
		require.GreaterOrEqual(t, lost, lastLost, "the sum of HedgesLost decreased")
		lastCalls, lastFailed, lastLost = calls, failed, lost
	}
	close(stop)
	wg.Wait()
	// Then the balancer drops every backend and they stay idle past the grace: every row is
	// removed, however the reads fell, and its counts folded.
	w.list()
	w.rows(t)
	w.clock.Add(int64(backendIdleGrace))
	rows := w.rows(t)
	require.Contains(t, rows, RemovedBackendsAddr, "no row was removed")
	var wantCalls, wantFailed, wantLost uint64
	for l := range lanes {
		wantCalls, wantFailed, wantLost = wantCalls+counted[l], wantFailed+failures[l], wantLost+losses[l]
	}
	calls, failed, lost := totals(rows)
	require.Equal(t, wantCalls, calls)
	require.Equal(t, wantFailed, failed, "a lost hedge counted as a failure, or a failure lost")
	require.Equal(t, wantLost, lost)
	t.Logf("%d calls, %d failed, %d of them in the row of removed backends", calls, failed, rows[RemovedBackendsAddr].Calls)
}
