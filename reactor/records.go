package reactor

import (
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/encode"
)

// recordPool keeps the call records that delivered calls left behind, with their encode
// buffers, for the calls to come. The reactor's mu guards it: Call takes a record in the hold
// that admits the call, and Tick gives one back in the hold that counts its delivery, so the
// pool costs no lock of its own. It keeps as many records as were ever outstanding at once,
// at most MaxOutstanding, so that a burst reuses memory an earlier one touched rather than
// fresh pages.
type recordPool struct {
	free []*callcore.Call
}

// get returns a free record, or a new one; mu held.
func (p *recordPool) get() *callcore.Call {
	if n := len(p.free); n > 0 {
		c := p.free[n-1]
		p.free[n-1] = nil
		p.free = p.free[:n-1]
		return c
	}
	return new(callcore.Call)
}

// put starts the record's next use and keeps it; mu held. The record must be settled, and no
// goroutine may use it afterwards but through a generation check.
func (p *recordPool) put(c *callcore.Call) {
	if cap(c.Request) > encode.MaxKeptBuffer {
		c.Request = nil // so that one huge request does not pin its memory
	}
	c.Recycle()
	p.free = append(p.free, c)
}
