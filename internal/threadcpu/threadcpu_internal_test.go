package threadcpu

import (
	"runtime"
	"testing"
	"time"
)

// TestNowCountsWorkNotWaiting: on Linux, a spinning thread's CPU time advances, never faster
// than the wall clock, and a sleeping thread's barely moves.
func TestNowCountsWorkNotWaiting(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, ok := Now()
	if !ok {
		if runtime.GOOS == "linux" {
			t.Fatal("thread CPU time not readable on Linux")
		}
		t.Skip("no thread CPU clock on " + runtime.GOOS)
	}
	start := time.Now()
	c1 := c0
	for c1-c0 < 10*time.Millisecond {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("5 s of spinning counted as %v of CPU", c1-c0)
		}
		c1, _ = Now()
	}
	if wall := time.Since(start); c1-c0 > wall+time.Millisecond {
		t.Errorf("%v of CPU in %v of wall time", c1-c0, wall)
	}
	time.Sleep(20 * time.Millisecond) // the waiting being measured, not synchronisation
	if c2, _ := Now(); c2-c1 > 5*time.Millisecond {
		t.Errorf("20 ms of sleeping counted as %v of CPU", c2-c1)
	}
}
