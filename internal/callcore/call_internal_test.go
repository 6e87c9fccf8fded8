package callcore

import (
	"math"
	"testing"
	"unsafe"

	"google.golang.org/protobuf/types/known/emptypb"
)

// TestCallRecordSize guards the size of the call record. Every outstanding call holds one, and
// a burst larger than any before it makes new ones, so its size is fresh heap per call there,
// and every byte is one the host or the reactor goroutine touches per call. The budget is the
// record's size: grow it only when the burst suite shows that the new field is worth its cost.
func TestCallRecordSize(t *testing.T) {
	if got, limit := unsafe.Sizeof(Call{}), uintptr(144); got > limit {
		t.Fatalf("callcore.Call is %d bytes, over its budget of %d: move rarely used fields to Extra", got, limit)
	}
}

// TestPromiseSize guards the size of a promise, the one allocation Call makes per call: the
// outcome, the inline callbacks and the link to the record. Records are reused; promises come
// from fresh memory in a burst, so every byte here is a byte the host touches per call.
func TestPromiseSize(t *testing.T) {
	if got, limit := unsafe.Sizeof(Promise[*emptypb.Empty]{}), uintptr(80); got > limit {
		t.Fatalf("callcore.Promise is %d bytes, over its budget of %d", got, limit)
	}
}

// TestSinceAt checks how a record keeps its claim and settle times: in whole microseconds
// after Submitted, rounded down, saturating at both ends, and back to the owner's clock.
func TestSinceAt(t *testing.T) {
	const submitted = 5_000_000_000 // 5 s after the owner's epoch
	tests := []struct {
		name string
		t    int64
		us   uint32
		at   int64
	}{
		{"at submission", submitted, 0, submitted},
		{"before submission", submitted - 1_000, 0, submitted},
		{"rounded down", submitted + 2_999, 2, submitted + 2_000},
		{"an hour later", submitted + 3_600_000_000_000, 3_600_000_000, submitted + 3_600_000_000_000},
		{"saturated", submitted + 1<<62, math.MaxUint32, submitted + math.MaxUint32*1_000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &Call{Submitted: submitted}
			if us := c.Since(tc.t); us != tc.us {
				t.Fatalf("Since(%d) = %d, want %d", tc.t, us, tc.us)
			}
			if at := c.At(tc.us); at != tc.at {
				t.Fatalf("At(%d) = %d, want %d", tc.us, at, tc.at)
			}
		})
	}
}
