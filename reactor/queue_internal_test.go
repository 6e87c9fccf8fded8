package reactor

import (
	"testing"
	"unsafe"
)

// TestSubmissionSize keeps a submission slot at 80 bytes: the host writes one per call, so in
// a burst each byte of it is a byte of the ring the game loop's thread writes per call.
func TestSubmissionSize(t *testing.T) {
	if got, limit := unsafe.Sizeof(submission{}), uintptr(80); got > limit {
		t.Errorf("a submission slot is %d bytes, over its budget of %d", got, limit)
	}
}
