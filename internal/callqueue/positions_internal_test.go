package callqueue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
)

// posStep is one step of a TestCallsByPosition script.
type posStep struct {
	op  string // "put", "settle", "reuse", "find" or "lapped"
	pos uint64 // put, find: the submission position
	rec string // put, settle, reuse: the record; find: the one expected, "" for none
	n   int    // lapped: how many entries lapped holds
}

// put names the record rec, in its current use, the call submitted at pos.
func put(pos uint64, rec string) posStep { return posStep{op: "put", pos: pos, rec: rec} }

// settle settles the current use of rec, as the reactor does when it drops a call.
func settle(rec string) posStep { return posStep{op: "settle", rec: rec} }

// reuse settles the current use of rec and starts its next, as a delivered record is reused.
func reuse(rec string) posStep { return posStep{op: "reuse", rec: rec} }

// find expects Find(pos) to return rec, in the use it was put in, or nothing if rec is "".
func find(pos uint64, rec string) posStep { return posStep{op: "find", pos: pos, rec: rec} }

// lapped expects the entries kept for lapped calls to number n.
func lapped(n int) posStep { return posStep{op: "lapped", n: n} }

// TestCallsByPosition runs scripts of puts, settlements and finds against an index of a
// ring of four slots: a call is found by its position until a lap later, and beyond that
// only if it was unsettled when its slot was taken, once; settled calls kept for a lap are
// swept out once as many are kept as the ring has slots, and unsettled ones never.
func TestCallsByPosition(t *testing.T) {
	tests := []struct {
		name  string
		steps []posStep
	}{
		{"a call is found at its position, as often as asked",
			[]posStep{put(0, "a"), put(1, "b"), find(0, "a"), find(1, "b"), find(0, "a")}},
		{"a settled call is still found until a lap later (the cancel then finds it settled)",
			[]posStep{put(2, "a"), settle("a"), find(2, "a")}},
		{"nothing is found at a position never put, nor a lap before or after one",
			[]posStep{find(3, ""), put(5, "a"), find(4, ""), find(1, ""), find(9, "")}},
		{"a call settled when its slot is taken a lap later is not kept",
			[]posStep{put(1, "a"), settle("a"), put(5, "b"), lapped(0), find(1, ""), find(5, "b")}},
		{"a call unsettled when its slot is taken is kept, and found once",
			[]posStep{put(1, "a"), put(5, "b"), lapped(1), find(5, "b"), find(1, "a"), lapped(0), find(1, ""), find(5, "b")}},
		{"a call kept for a lap is found even after it settled",
			[]posStep{put(3, "a"), put(7, "b"), settle("a"), find(3, "a")}},
		{"a record reused for a later call is not kept for the earlier one",
			[]posStep{put(1, "a"), reuse("a"), put(5, "b"), lapped(0), find(1, "")}},
		{"positions count modulo 2³², as a cancel names them",
			[]posStep{put(1<<32+2, "a"), find(2, "a"), put(1<<32+6, "b"), find(6, "b"), find(2, "a"), find(2, "")}},
		{"settled lapped calls are swept out once lapped holds as many as the ring has slots",
			[]posStep{
				put(0, "a"), put(1, "b"), put(2, "c"), put(3, "d"),
				put(4, "e"), put(5, "f"), put(6, "g"), put(7, "h"), lapped(4),
				settle("a"), settle("b"), settle("c"),
				put(8, "i"), lapped(2), // the sweep kept d, then e joined it
				find(0, ""), find(1, ""), find(2, ""), find(3, "d"), find(4, "e"), find(8, "i"),
			}},
		{"settled lapped calls stay until lapped is as large as the ring",
			[]posStep{
				put(0, "a"), put(1, "b"), put(4, "e"), put(5, "f"), lapped(2),
				settle("a"), put(2, "c"), put(6, "g"), lapped(3), find(0, "a"),
			}},
		{"unsettled lapped calls survive every sweep",
			[]posStep{
				put(0, "a"), put(1, "b"), put(2, "c"), put(3, "d"),
				put(4, "e"), put(5, "f"), put(6, "g"), put(7, "h"),
				put(8, "i"), put(9, "j"), lapped(6),
				find(0, "a"), find(1, "b"), find(2, "c"), find(3, "d"), find(4, "e"), find(5, "f"), find(8, "i"), lapped(0),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := NewCallsByPosition(NewSubmissionRing(4, make(chan struct{}, 1)))
			recs := map[string]*callcore.Call{}
			gens := map[string]uint32{} // each record's use when it was put
			rec := func(name string) *callcore.Call {
				if recs[name] == nil {
					recs[name] = new(callcore.Call)
				}
				return recs[name]
			}
			for i, s := range tt.steps {
				switch s.op {
				case "put":
					c := rec(s.rec)
					gens[s.rec] = c.Gen()
					x.Put(s.pos, c, c.Gen())
				case "settle", "reuse":
					c := rec(s.rec)
					require.True(t, c.Move(c.Gen(), callcore.Unclaimed, callcore.Dropped), "step %d: %s settles once", i, s.rec)
					if s.op == "reuse" {
						c.Recycle()
					}
				case "find":
					c, gen, ok := x.Find(uint32(s.pos))
					if s.rec == "" {
						require.False(t, ok, "step %d: Find(%d) found a call", i, s.pos)
						continue
					}
					require.True(t, ok, "step %d: Find(%d) found nothing", i, s.pos)
					require.Same(t, recs[s.rec], c, "step %d: Find(%d)", i, s.pos)
					require.Equal(t, gens[s.rec], gen, "step %d: Find(%d)'s use", i, s.pos)
				case "lapped":
					require.Len(t, x.lapped, s.n, "step %d", i)
				}
			}
		})
	}
}
