//go:build linux

package main

// Linux process facilities: CPU affinity for -pin, CPU time, peak RSS and minor page faults
// for the report.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"
)

// pinSupported reports whether -pin works on this OS.
const pinSupported = true

// pinProcess restricts every thread of this process to CPU cpu. sched_setaffinity applies to
// one thread, and the Go runtime has started several before main runs, so it pins each thread
// listed in /proc/self/task; threads started later inherit the affinity of the thread that
// starts them. It repeats the listing until a pass finds no thread it has not pinned, so a
// thread started during a pass is not missed.
func pinProcess(cpu int) error {
	if cpu < 0 || cpu >= 1024 {
		return fmt.Errorf("pin: CPU %d out of range", cpu)
	}
	var mask [1024 / 64]uint64
	mask[cpu/64] = 1 << (cpu % 64)
	pinned := make(map[int]bool)
	for {
		tids, err := threadIDs("self")
		if err != nil {
			return err
		}
		fresh := 0
		for _, tid := range tids {
			if pinned[tid] {
				continue
			}
			fresh++
			pinned[tid] = true
			_, _, e := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), unsafe.Sizeof(mask), uintptr(unsafe.Pointer(&mask)))
			if e != 0 && e != syscall.ESRCH { // ESRCH: the thread has exited since the listing
				return fmt.Errorf("pin: sched_setaffinity(thread %d, CPU %d): %w", tid, cpu, e)
			}
		}
		if fresh == 0 {
			return nil
		}
	}
}

// threadIDs lists the threads of process pid ("self" for this one).
func threadIDs(pid string) ([]int, error) {
	ents, err := os.ReadDir(filepath.Join("/proc", pid, "task"))
	if err != nil {
		return nil, err
	}
	tids := make([]int, 0, len(ents))
	for _, e := range ents {
		if tid, err := strconv.Atoi(e.Name()); err == nil {
			tids = append(tids, tid)
		}
	}
	return tids, nil
}

// affinity describes the CPUs the threads of process pid (0: this one) may run on, from
// Cpus_allowed_list in /proc/<pid>/task/<tid>/status, e.g. "0 (all 9 threads)" or
// "0 (7 threads), 0-1 (2 threads)".
func affinity(pid int) string {
	p := "self"
	if pid != 0 {
		p = strconv.Itoa(pid)
	}
	tids, err := threadIDs(p)
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	count := make(map[string]int)
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join("/proc", p, "task", strconv.Itoa(tid), "status"))
		if err != nil {
			continue // exited
		}
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
				count[strings.TrimSpace(v)]++
			}
		}
	}
	if len(count) == 1 {
		for cpus, n := range count {
			return fmt.Sprintf("%s (all %d threads)", cpus, n)
		}
	}
	parts := make([]string, 0, len(count))
	for cpus, n := range count {
		parts = append(parts, fmt.Sprintf("%s (%d threads)", cpus, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// usage is this process's resource usage so far.
type usage struct {
	cpu    time.Duration // user + system
	maxRSS int64         // peak resident set, bytes
	minFlt int64         // minor page faults: pages mapped without I/O, e.g. the first touch of a fresh page
}

// getUsage returns getrusage(RUSAGE_SELF).
func getUsage() usage {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return usage{}
	}
	return usage{
		cpu:    time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		maxRSS: int64(ru.Maxrss) * 1024, // KiB on Linux; int32 on some 32-bit platforms
		minFlt: int64(ru.Minflt),        // int32 on some 32-bit platforms
	}
}

// threadUsage is the resource usage of the calling OS thread so far. The kernel brings a
// running thread's user and system times up to date only at its scheduler ticks and context
// switches, so over a few milliseconds they are coarse: internal/threadcpu reads the exact
// total.
type threadUsage struct {
	sys    time.Duration
	minFlt int64 // minor page faults the thread took
	nivcsw int64 // involuntary context switches: the kernel gave the thread's CPU to another
}

// getThreadUsage returns getrusage(RUSAGE_THREAD) of the calling OS thread; the caller keeps
// its goroutine on that thread (runtime.LockOSThread) between two readings.
func getThreadUsage() threadUsage {
	const rusageThread = 1 // RUSAGE_THREAD, Linux ≥ 2.6.26
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return threadUsage{}
	}
	return threadUsage{
		sys:    time.Duration(ru.Stime.Nano()),
		minFlt: int64(ru.Minflt),
		nivcsw: int64(ru.Nivcsw),
	}
}

// resetPeakRSS resets this process's peak resident set (ru_maxrss, VmHWM) to its current
// resident set, by writing 5 to /proc/self/clear_refs (Linux ≥ 4.0).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// processCPU returns the CPU time process pid has used, summed over its live threads from
// /proc/<pid>/task/<tid>/schedstat (nanoseconds on the CPU), which is far finer than the
// clock ticks of /proc/<pid>/stat. The backend's threads live as long as it does.
func processCPU(pid int) (time.Duration, bool) {
	p := strconv.Itoa(pid)
	tids, err := threadIDs(p)
	if err != nil {
		return 0, false
	}
	var sum time.Duration
	for _, tid := range tids {
		b, err := os.ReadFile(filepath.Join("/proc", p, "task", strconv.Itoa(tid), "schedstat"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, false
		}
		f := strings.Fields(string(b))
		if len(f) == 0 {
			return 0, false
		}
		ns, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, false
		}
		sum += time.Duration(ns)
	}
	return sum, true
}
