//go:build !linux

package main

// Stand-ins for the Linux process facilities: no pinning, no CPU time, peak RSS,
// page faults or context switches.

import (
	"errors"
	"time"
)

const pinSupported = false

func pinProcess(int) error { return errors.New("pin: only supported on Linux") }

func affinity(int) string { return "unknown" }

type usage struct {
	cpu    time.Duration
	maxRSS int64
	minFlt int64
}

func getUsage() usage { return usage{} }

type threadUsage struct {
	sys            time.Duration
	minFlt, nivcsw int64
}

func getThreadUsage() threadUsage { return threadUsage{} }

func resetPeakRSS() error { return errors.New("peak RSS reset: only supported on Linux") }

func processCPU(int) (time.Duration, bool) { return 0, false }
