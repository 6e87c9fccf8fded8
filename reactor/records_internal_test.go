package reactor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/testpb"
)

// TestRecordPoolSlabs: new records come from slabs, each with a first buffer of its own that
// no other record's encoding can write into, and freed records are reused before any new
// one is made.
func TestRecordPoolSlabs(t *testing.T) {
	var p recordPool
	const n = 3*recordSlab + 5
	recs := make([]*callcore.Call, n)
	for i := range recs {
		recs[i] = p.get()
		require.Zero(t, len(recs[i].Request), "record %d", i)
		require.Equal(t, firstBufferBytes, cap(recs[i].Request), "record %d", i)
		for j := range i {
			require.NotSame(t, recs[j], recs[i], "records %d and %d", j, i)
		}
	}
	// Fill every buffer to its capacity, then grow some past it: no other record's bytes
	// change.
	for i, c := range recs {
		for range firstBufferBytes {
			c.Request = append(c.Request, byte(i))
		}
	}
	for i, c := range recs {
		if i%3 == 0 {
			c.Request = append(c.Request, 0xff, 0xff)
		}
	}
	for i, c := range recs {
		for k := range firstBufferBytes {
			require.Equal(t, byte(i), c.Request[k], "record %d, byte %d", i, k)
		}
	}

	// Freed records come back last in, first out, with the buffers they grew.
	grown := recs[3]
	p.put(recs[1])
	p.put(grown)
	require.Same(t, grown, p.get())
	require.Greater(t, cap(grown.Request), firstBufferBytes, "a grown buffer is kept")
	require.Same(t, recs[1], p.get())
	require.Equal(t, recordSlab-5, len(p.unused), "no new record was made while freed ones were left")
}

// TestReserveRecords: the reactor goroutine makes the free records a burst's next calls will
// need, in whole slabs, never more than max in all, and nothing when enough are free.
func TestReserveRecords(t *testing.T) {
	cases := []struct {
		name               string
		free, made         int // before
		n, max             int
		wantFree, wantMade int
	}{
		{name: "none free", n: 10, max: 1000, wantFree: recordSlab, wantMade: recordSlab},
		{name: "a large turn", n: 3*recordSlab + 1, max: 1000, wantFree: 4 * recordSlab, wantMade: 4 * recordSlab},
		{name: "enough free", free: 20, made: 20, n: 20, max: 1000, wantFree: 20, wantMade: 20},
		{name: "some free", free: 5, made: 30, n: 20, max: 1000, wantFree: 5 + recordSlab, wantMade: 30 + recordSlab},
		{name: "capped by max", made: 90, n: 50, max: 100, wantFree: 10, wantMade: 100},
		{name: "at max", made: 100, n: 50, max: 100, wantFree: 0, wantMade: 100},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Reactor{}
			for range tc.free {
				r.records.free = append(r.records.free, new(callcore.Call))
			}
			r.records.made = tc.made
			r.reserveRecords(tc.n, tc.max)
			require.Len(t, r.records.free, tc.wantFree)
			require.Equal(t, tc.wantMade, r.records.made)
			for i, c := range r.records.free[tc.free:] {
				require.Zero(t, len(c.Request), "record %d", i)
				require.Equal(t, firstBufferBytes, cap(c.Request), "record %d", i)
			}
		})
	}
}

// TestRecordsStayWithinMaxOutstanding: waves of bursts that fill MaxOutstanding, with the
// reactor goroutine making records ahead of them, leave at most MaxOutstanding records made,
// every one of them free once the calls are delivered.
func TestRecordsStayWithinMaxOutstanding(t *testing.T) {
	const max = 3*recordSlab + 10
	r, err := New(Config{Conn: answerConn{}, MaxOutstanding: max})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })
	for wave := range 5 {
		settled := 0
		for range max {
			Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled++ })
		}
		require.Eventually(t, func() bool {
			r.Tick(time.Second)
			return settled == max
		}, 5*time.Second, time.Millisecond, "wave %d", wave)
		r.mu.Lock()
		made, free := r.records.made, len(r.records.free)
		r.mu.Unlock()
		require.LessOrEqual(t, made, max, "wave %d", wave)
		require.Equal(t, made, free, "wave %d: every record made is free again", wave)
	}
}
