package reactor_test

import "syscall"

// faultThreadSwitches returns how many times the kernel has switched the calling OS thread
// out: voluntarily (it blocked: a futex, a stop-the-world) or involuntarily (its time slice
// went to another thread, of this process or another). The counts are exact; the CPU time
// getrusage reports is not (this VM's kernel accounts it in 4 ms jiffies: we saw idle Ticks
// charged 4 ms), so tick reads CPU time from package threadcpu. ok is false if getrusage
// failed.
func faultThreadSwitches() (s faultSwitches, ok bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return s, false
	}
	return faultSwitches{voluntary: int64(ru.Nvcsw), involuntary: int64(ru.Nivcsw)}, true
}
