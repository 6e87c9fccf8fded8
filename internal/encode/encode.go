// Package encode encodes requests into buffers their callers keep for reuse: package reactor
// encodes each request, on the goroutine that submits it, into the buffer of a reused call
// record (Append), and the codec hands those bytes to gRPC without a second
// marshal or a copy.
package encode

import (
	"google.golang.org/protobuf/proto"
)

// MaxKeptBuffer is the largest encode buffer worth keeping for reuse: a caller that reuses
// buffers should drop larger ones, so that one huge request does not pin its memory.
const MaxKeptBuffer = 64 << 10

// Append encodes m onto dst[:0] and returns the result; it allocates only when dst has too
// little capacity. On error it returns dst[:0] and the error.
func Append(dst []byte, m proto.Message) ([]byte, error) {
	out, err := proto.MarshalOptions{}.MarshalAppend(dst[:0], m)
	if err != nil {
		return dst[:0], err
	}
	return out, nil
}
