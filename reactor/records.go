package reactor

import (
	"sync"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/encode"
)

// recordPool keeps the call records that delivered calls left behind, with their encode
// buffers, for the calls to come. The goroutines that call Call take from it and the Tick
// goroutine gives back, usually the same goroutine, so its lock is not shared with prpc's own
// goroutines. It keeps as many records as were ever outstanding at once, at most
// MaxOutstanding, so that a burst reuses memory an earlier one touched rather than fresh
// pages.
type recordPool struct {
	mu   sync.Mutex
	free []*callcore.Call
}

// get returns a free record, or a new one.
func (p *recordPool) get() *callcore.Call {
	p.mu.Lock()
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		p.mu.Unlock()
		return c
	}
	p.mu.Unlock()
	return new(callcore.Call)
}

// put starts the record's next use and keeps it. The record must be settled, and no
// goroutine may use it afterwards but through a generation check.
func (p *recordPool) put(c *callcore.Call) {
	recycle(c)
	p.mu.Lock()
	p.free = append(p.free, c)
	p.mu.Unlock()
}

// putAll is put for every record of cs, under one lock.
func (p *recordPool) putAll(cs []*callcore.Call) {
	for _, c := range cs {
		recycle(c)
	}
	p.mu.Lock()
	p.free = append(p.free, cs...)
	p.mu.Unlock()
}

// recycle starts c's next use, dropping an encode buffer too large to keep.
func recycle(c *callcore.Call) {
	if cap(c.Request) > encode.MaxKeptBuffer {
		c.Request = nil
	}
	c.Recycle()
}
