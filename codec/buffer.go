package codec

import (
	"sync"

	"google.golang.org/protobuf/proto"
)

// maxPooledBuffer is the largest buffer kept for reuse; larger ones are left to the garbage
// collector so that one huge request does not pin its memory.
const maxPooledBuffer = 64 << 10

var buffers = sync.Pool{New: func() any { return new(Buffer) }}

// Buffer is a pooled encode buffer, owned by whoever Encode returned it to until Release.
// Buffers up to 64 KiB are reused; larger ones are left to the garbage collector.
type Buffer struct {
	B []byte // the encoded message
}

// Size returns the encoded size of m, caching sizes inside m so that Encode does not compute
// them again.
func Size(m proto.Message) int { return proto.Size(m) }

// Encode encodes m, whose size Size has just returned, into a pooled buffer. The caller must
// call Release once the bytes are no longer used, and must not change m in between.
func Encode(m proto.Message, size int) (*Buffer, error) {
	b := buffers.Get().(*Buffer)
	if cap(b.B) < size {
		b.B = make([]byte, 0, size)
	}
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(b.B[:0], m)
	if err != nil {
		b.Release()
		return nil, err
	}
	b.B = out
	return b, nil
}

// Release returns b to the pool. b must not be used afterwards.
func (b *Buffer) Release() {
	if cap(b.B) > maxPooledBuffer {
		b.B = nil
	}
	b.B = b.B[:0]
	buffers.Put(b)
}
