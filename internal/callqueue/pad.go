package callqueue

// CacheLinePad keeps the fields on either side of it on different cache lines: a write by
// one goroutine then does not evict the line another goroutine reads. 128 bytes, two lines,
// since x86 processors fetch lines in adjacent pairs.
type CacheLinePad [128]byte
