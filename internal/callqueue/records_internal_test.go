package callqueue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
)

// TestRecordPool: new records come from slabs of distinct records, and records the Tick
// goroutine hands back are reused before any new one is made.
func TestRecordPool(t *testing.T) {
	p := RecordPool{Freed: new(FreedRecords)}
	const n = 3*RecordSlab + 5
	recs := make([]*callcore.Call, n)
	seen := map[*callcore.Call]bool{}
	for i := range recs {
		recs[i] = p.Get()
		require.False(t, seen[recs[i]], "record %d made twice", i)
		seen[recs[i]] = true
	}
	require.Equal(t, n, p.Made)

	var back []*callcore.Call
	back = append(back, recs[1], recs[7])
	back = p.Freed.Give(back)
	require.Empty(t, back, "give empties the Tick goroutine's slice for reuse")
	got := map[*callcore.Call]bool{p.Get(): true, p.Get(): true}
	require.Equal(t, map[*callcore.Call]bool{recs[1]: true, recs[7]: true}, got)
	require.Equal(t, n, p.Made, "no record was made while freed ones were left")
	require.NotNil(t, p.Get())
	require.Equal(t, n+1, p.Made)
}
