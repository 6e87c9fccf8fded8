package callqueue

import "github.com/trixnew/prpc/internal/callcore"

// CallsByPosition names the record of each call the reactor goroutine accepted, by its
// submission position modulo the submission ring's size, for the cancels of promises, which
// know only the position. An entry is overwritten a lap of the ring later. Admission bounds
// the calls outstanding by the ring's size, not their age: a call still unsettled when its
// entry is overwritten (a long call among quick ones) keeps it in lapped, by position, until
// it is cancelled or a sweep finds it settled. Reactor goroutine only.
type CallsByPosition struct {
	ring   *SubmissionRing // whose positions the entries are indexed by
	latest []posEntry      // the latest call accepted at each of the ring's slots
	lapped map[uint32]posEntry
}

// posEntry is the record of the call submitted at pos, in its use gen.
type posEntry struct {
	pos uint64
	c   *callcore.Call
	gen uint32
}

// NewCallsByPosition returns an empty index of the calls submitted through ring, with an
// entry for each of its slots.
func NewCallsByPosition(ring *SubmissionRing) CallsByPosition {
	return CallsByPosition{ring: ring, latest: make([]posEntry, ring.Size())}
}

// Put names c, in its use gen, the call submitted at pos. The entry of the call submitted a
// lap or more earlier in the same slot is kept if that call is still unsettled.
func (x *CallsByPosition) Put(pos uint64, c *callcore.Call, gen uint32) {
	slot := &x.latest[x.ring.Index(pos)]
	if old := *slot; old.c != nil && old.c.Unsettled(old.gen) {
		x.keepLapped(old)
	}
	*slot = posEntry{pos: pos, c: c, gen: gen}
}

// keepLapped keeps the entry of an unsettled call whose slot of latest a new call takes. It
// first sweeps out the entries of settled calls once lapped holds as many entries as latest:
// at most that many calls are unsettled, so lapped stays within twice latest's size, and the
// sweep's cost is spread over as many insertions.
func (x *CallsByPosition) keepLapped(ent posEntry) {
	if x.lapped == nil {
		x.lapped = make(map[uint32]posEntry)
	}
	if len(x.lapped) >= len(x.latest) {
		for pos, old := range x.lapped {
			if !old.c.Unsettled(old.gen) {
				delete(x.lapped, pos)
			}
		}
	}
	x.lapped[uint32(ent.pos)] = ent
}

// Find returns the record and use of the call submitted at pos (modulo 2³²), if it may still
// be unsettled. A lapped call's entry is found once: Find removes it.
func (x *CallsByPosition) Find(pos uint32) (c *callcore.Call, gen uint32, ok bool) {
	if ent := x.latest[x.ring.Index(uint64(pos))]; ent.c != nil && uint32(ent.pos) == pos {
		return ent.c, ent.gen, true
	}
	ent, ok := x.lapped[pos]
	if ok {
		delete(x.lapped, pos)
	}
	return ent.c, ent.gen, ok
}
