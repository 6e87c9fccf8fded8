// Package threadcpu reads the CPU time of the calling OS thread, for tests and benchmarks
// that tell time a goroutine spent working from time it spent off the CPU. The caller must
// be locked to its thread (runtime.LockOSThread) for two readings to be comparable.
package threadcpu
