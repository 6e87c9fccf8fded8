package reactor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/testpb"
)

// TestRecordPool: new records come from slabs of distinct records, and records the Tick
// goroutine hands back are reused before any new one is made.
func TestRecordPool(t *testing.T) {
	p := recordPool{freed: new(freedRecords)}
	const n = 3*recordSlab + 5
	recs := make([]*callcore.Call, n)
	seen := map[*callcore.Call]bool{}
	for i := range recs {
		recs[i] = p.get()
		require.False(t, seen[recs[i]], "record %d made twice", i)
		seen[recs[i]] = true
	}
	require.Equal(t, n, p.made)

	var back []*callcore.Call
	back = append(back, recs[1], recs[7])
	back = p.freed.give(back)
	require.Empty(t, back, "give empties the Tick goroutine's slice for reuse")
	got := map[*callcore.Call]bool{p.get(): true, p.get(): true}
	require.Equal(t, map[*callcore.Call]bool{recs[1]: true, recs[7]: true}, got)
	require.Equal(t, n, p.made, "no record was made while freed ones were left")
	require.NotNil(t, p.get())
	require.Equal(t, n+1, p.made)
}

// TestRecordsStayWithinMaxOutstanding: waves of bursts that fill MaxOutstanding reuse the
// records of the waves before: the reactor goroutine makes no more records than were ever
// outstanding at once, rounded up to a slab.
func TestRecordsStayWithinMaxOutstanding(t *testing.T) {
	const max = 3*recordSlab + 10
	r, err := New(Config{Conn: answerConn{}, MaxOutstanding: max})
	require.NoError(t, err)
	for wave := range 5 {
		settled := 0
		for range max {
			Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled++ })
		}
		require.Eventually(t, func() bool {
			r.Tick(time.Second)
			return settled == max
		}, 5*time.Second, time.Millisecond, "wave %d", wave)
	}
	require.NoError(t, r.Close(context.Background()))
	require.LessOrEqual(t, r.recordsMade, max+recordSlab)
	require.GreaterOrEqual(t, r.recordsMade, max/2, "a wave has most of its calls outstanding at once")
}
