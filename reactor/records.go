package reactor

import (
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/encode"
)

// Records are made in slabs of recordSlab, each with its first encode buffer carved from one
// byte slab of recordSlab × firstBufferBytes: a burst that outgrows the records kept so far
// costs two allocations per recordSlab calls instead of two per call, and its records and
// buffers lie side by side in memory, in the order Call takes them.
const (
	recordSlab       = 64
	firstBufferBytes = 64 // a larger request grows its record's buffer on its first encoding
)

// recordPool keeps the call records that delivered calls left behind, with their encode
// buffers, for the calls to come. The reactor's mu guards it: Call takes a record in the hold
// that admits the call, and Tick gives one back in the hold that counts its delivery, so the
// pool costs no lock of its own. It keeps as many records as were ever outstanding at once,
// and those the reactor goroutine made ahead of a burst (reserveRecords), at most
// MaxOutstanding in all, so that a burst reuses memory an earlier one touched rather than
// fresh pages. Records stay with the pool for the reactor's life, so a slab is never kept
// alive by one record alone.
type recordPool struct {
	free []*callcore.Call
	made int // records made and not left to the collector: in use or free
	// unused are the records of the newest slab that no call has taken yet.
	unused []callcore.Call
}

// get returns a free record, or a new one; mu held.
func (p *recordPool) get() *callcore.Call {
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return c
	}
	if len(p.unused) == 0 {
		p.unused = newSlab(recordSlab)
	}
	c := &p.unused[0]
	p.unused = p.unused[1:]
	p.made++
	return c
}

// newSlab makes n records, each with its first buffer: empty, of firstBufferBytes capacity,
// carved from one byte slab so that no record's encoding can write into another's.
func newSlab(n int) []callcore.Call {
	recs, bufs := make([]callcore.Call, n), make([]byte, n*firstBufferBytes)
	for i := range recs {
		recs[i].Request = bufs[i*firstBufferBytes : i*firstBufferBytes : (i+1)*firstBufferBytes]
	}
	return recs
}

// reserveRecords makes sure that at least n free records wait for the calls to come, making
// the missing ones, in whole slabs, outside mu; it keeps no more than limit records in all.
// The reactor goroutine calls it after a turn that admitted n calls, so that while a burst
// goes on, its later calls find their records made, and the goroutine that submits them
// neither allocates them nor pays the collector's assist for them. It takes mu once when
// nothing is missing.
func (r *Reactor) reserveRecords(n, limit int) {
	r.mu.Lock()
	missing := r.records.missing(n, limit)
	r.mu.Unlock()
	if missing == 0 {
		return
	}
	recs := newSlab(recordSlab * ((missing + recordSlab - 1) / recordSlab))
	r.mu.Lock()
	r.records.add(recs, limit)
	r.mu.Unlock()
}

// missing returns how many records to make so that n are free, within limit records in all;
// mu held.
func (p *recordPool) missing(n, limit int) int {
	return max(0, min(n-len(p.free), limit-p.made))
}

// add makes the first of recs free, as many as limit records in all allows, and leaves the
// rest to the collector; mu held.
func (p *recordPool) add(recs []callcore.Call, limit int) {
	recs = recs[:max(0, min(len(recs), limit-p.made))]
	for i := range recs {
		p.free = append(p.free, &recs[i])
	}
	p.made += len(recs)
}

// forget stops counting a record that is left to the collector: its lane may still use it;
// mu held.
func (p *recordPool) forget() { p.made-- }

// put starts the record's next use and keeps it; mu held. The record must be settled, and no
// goroutine may use it afterwards but through a generation check.
func (p *recordPool) put(c *callcore.Call) {
	if cap(c.Request) > encode.MaxKeptBuffer {
		c.Request = nil // so that one huge request does not pin its memory
	}
	c.Recycle()
	p.free = append(p.free, c)
}
