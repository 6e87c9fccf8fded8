package reactor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
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
