package reactor

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/testpb"
)

// TestRecordsStayWithinMaxOutstanding: waves of bursts that fill MaxOutstanding reuse the
// records of the waves before: the reactor goroutine makes no more records than were ever
// outstanding at once, rounded up to a slab.
func TestRecordsStayWithinMaxOutstanding(t *testing.T) {
	const max = 3*callqueue.RecordSlab + 10
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
	require.LessOrEqual(t, r.recordsMade, max+callqueue.RecordSlab)
	require.GreaterOrEqual(t, r.recordsMade, max/2, "a wave has most of its calls outstanding at once")
}
