package policybench

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain checks that the scenarios leave no goroutine behind: every reactor, connection and
// server they start is closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
