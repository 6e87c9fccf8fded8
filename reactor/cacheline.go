package reactor

import "sync/atomic"

// cacheLinePad keeps the fields on either side of it on different cache lines: a write by
// one goroutine then does not evict the line another goroutine reads. 128 bytes, two lines,
// since x86 processors fetch lines in adjacent pairs.
type cacheLinePad [128]byte

// invokerLoad is the number of calls an invoker's lanes are running, on cache lines of its
// own: the lanes of different invokers do not write the same line.
type invokerLoad struct {
	atomic.Int32
	_ [128 - 4]byte
}
