package reactor

import (
	"testing"
	"unsafe"
)

// TestEventSize keeps the inbox's event at two words: the host appends one per call, so in a
// burst each byte of it is a byte of heap the game loop's thread touches per call.
func TestEventSize(t *testing.T) {
	if got, want := unsafe.Sizeof(event{}), 2*unsafe.Sizeof(uintptr(0)); got != want {
		t.Errorf("an inbox event is %d bytes, want %d", got, want)
	}
}
