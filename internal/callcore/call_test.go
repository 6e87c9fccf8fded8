package callcore

import (
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
