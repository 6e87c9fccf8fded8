//go:build linux

package threadcpu

import (
	"syscall"
	"time"
	"unsafe"
)

// Now returns the CPU time the calling OS thread has used (clock_gettime with
// CLOCK_THREAD_CPUTIME_ID, in nanoseconds, unlike getrusage, which some kernels account only
// in scheduler ticks). It costs one system call. ok is false if the clock could not be read.
func Now() (d time.Duration, ok bool) {
	const clockThreadCPUTimeID = 3
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTimeID, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return time.Duration(ts.Nano()), true
}
