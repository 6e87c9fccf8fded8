// Package encode encodes requests into buffers their callers keep for reuse: package reactor
// encodes each request, on the goroutine that submits it, into the buffer of a reused call
// record (Size, then Append), and the codec hands those bytes to gRPC without a second
// marshal or a copy.
package encode

import (
	"google.golang.org/protobuf/proto"
)

// MaxKeptBuffer is the largest encode buffer worth keeping for reuse: a caller that reuses
// buffers should drop larger ones, so that one huge request does not pin its memory.
const MaxKeptBuffer = 64 << 10

// Size returns the encoded size of m, caching sizes inside m so that Append does not compute
// them again.
func Size(m proto.Message) int { return proto.Size(m) }

// Append encodes m, whose size Size has just returned, onto dst[:0] and returns the result;
// it allocates only when dst has less capacity than size. m must not change in between. On
// error it returns dst[:0] and the error.
func Append(dst []byte, m proto.Message, size int) ([]byte, error) {
	if cap(dst) < size {
		dst = make([]byte, 0, size)
	}
	out, err := proto.MarshalOptions{UseCachedSize: true}.MarshalAppend(dst[:0], m)
	if err != nil {
		return dst[:0], err
	}
	return out, nil
}
