package reactor

import "sync/atomic"

// invokerLoad is the number of calls an invoker's lanes are running, on cache lines of its
// own: the lanes of different invokers do not write the same line.
type invokerLoad struct {
	atomic.Int32
	_ [128 - 4]byte
}
