package benchmarks

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the benchmarks leave no goroutine behind: every reactor, connection
// and server they start is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
