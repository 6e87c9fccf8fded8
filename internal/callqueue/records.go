package callqueue

import (
	"sync"

	"github.com/trixnew/prpc/internal/callcore"
)

// RecordSlab is how many call records are made at once: a burst that outgrows the records
// kept so far costs one allocation per RecordSlab calls instead of one per call, and its
// records lie side by side in memory, in the order the reactor goroutine takes them.
const RecordSlab = 64

// RecordPool is the reactor goroutine's store of call records: it gives each submitted call a
// record, taking first one that an earlier call left behind. Records are the reactor
// goroutine's alone, apart from those the Tick goroutine hands back (freed), so the pool needs
// no lock but freed's. It keeps as many records as were ever outstanding at once, so that a
// burst reuses memory an earlier one touched rather than fresh pages.
type RecordPool struct {
	free  []*callcore.Call
	spare []callcore.Call // records of the newest slab that no call has taken yet
	Made  int             // records taken from slabs so far
	Freed *FreedRecords
}

// Get returns a free record: a kept one, one the Tick goroutine handed back, or a new one.
// Reactor goroutine only.
func (p *RecordPool) Get() *callcore.Call {
	if len(p.free) == 0 {
		p.free = p.Freed.Swap(p.free)
	}
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return c
	}
	if len(p.spare) == 0 {
		p.spare = make([]callcore.Call, RecordSlab)
	}
	c := &p.spare[0]
	p.spare = p.spare[1:]
	p.Made++
	return c
}

// FreedRecords carries the records of delivered calls from the Tick goroutine, which frees
// them, back to the reactor goroutine, in one hold of its lock per Tick.
type FreedRecords struct {
	mu   sync.Mutex
	recs []*callcore.Call
}

// Give hands recs, recycled, to the reactor goroutine, and returns recs emptied for reuse.
// Tick goroutine only.
func (f *FreedRecords) Give(recs []*callcore.Call) []*callcore.Call {
	if len(recs) == 0 {
		return recs
	}
	f.mu.Lock()
	f.recs = append(f.recs, recs...)
	f.mu.Unlock()
	clear(recs)
	return recs[:0]
}

// Swap returns the records handed back so far and keeps spare, which must be empty, for the
// next ones: slices change hands, records are never copied. Reactor goroutine only.
func (f *FreedRecords) Swap(spare []*callcore.Call) []*callcore.Call {
	f.mu.Lock()
	out := f.recs
	f.recs = spare[:0]
	f.mu.Unlock()
	return out
}
