package callqueue

import (
	"runtime"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a lane still blocked in a
// ready queue's Take, say, that nothing woke.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitBound bounds every wait of these tests for another goroutine, so that a lost wake-up
// fails the test with a message instead of hanging it. It is not a measure of anything: the
// goroutines waited for have nothing to do but run, and ten seconds leaves room for -race on
// two busy cores a thousand times over.
const waitBound = 10 * time.Second

// receive returns the next value of ch, or fails the test if none comes within waitBound.
func receive[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	timer := time.NewTimer(waitBound)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
	}
	t.Fatalf("no %s within %v", what, waitBound)
	var zero T
	return zero
}

// waitUntil yields the processor until cond holds, and fails the test if it does not within
// waitBound. It waits on the condition itself, never for a guessed time.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(waitBound)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not %s within %v", what, waitBound)
		}
		runtime.Gosched()
	}
}
