package reactor

// cacheLinePad keeps the fields on either side of it on different cache lines: a write by
// one goroutine then does not evict the line another goroutine reads. 128 bytes, two lines,
// since x86 processors fetch lines in adjacent pairs.
type cacheLinePad [128]byte
