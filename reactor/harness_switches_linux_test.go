package reactor_test

import "syscall"

// threadSwitches returns how many times the kernel has switched the calling OS thread out:
// voluntarily (it blocked: a futex, a stop-the-world) or involuntarily (its time slice went to
// another thread, of this process or another). The counts are exact; the CPU time getrusage
// reports is not (a kernel may account it in whole scheduler ticks of several milliseconds),
// so tickAudit reads CPU time from package threadcpu. ok is false if getrusage failed.
func threadSwitches() (s switches, ok bool) {
	const rusageThread = 1 // RUSAGE_THREAD
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return s, false
	}
	return switches{voluntary: int64(ru.Nvcsw), involuntary: int64(ru.Nivcsw)}, true
}
