// Package codec gives programs the gRPC codec that a prpc reactor's invoker lanes pass with
// every call. The reactor needs nothing from it: each lane makes its own codec, and no
// reactor.Config field takes one.
//
// A program imports it only to make gRPC calls of its own that encode and decode as a
// reactor's calls do: a benchmark that compares prpc with plain grpc-go on the same bytes, or
// a test that checks what a reactor sends. A fake reactor.Config.Conn does not need it: the
// codec of each call it runs is among the call's options (grpc.ForceCodecV2), as gRPC passes
// it to the transport.
//
// The codec encodes a proto.Message by a plan worked out once per message type into a buffer
// it reuses, writing the bytes proto.Marshal writes, and decodes a response in place where it
// can. Its name is empty, so gRPC sends no content-subtype: the content-type is
// application/grpc, which means protobuf, as a plain grpc-go client sends it. Pass it per call
// with grpc.ForceCodecV2; never register it globally, which would replace the proto codec of
// the whole process.
package codec

import (
	"google.golang.org/grpc/encoding"

	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/limits"
)

// New returns a codec, as a reactor's invoker lane makes its own, that refuses a request over
// l.MaxRequestBytes and a response over l.MaxResponseBytes, naming the Limits field; a zero
// bound means no bound of the codec's own (a reactor's lanes get the defaults filled in). It
// serves one call at a time: give each goroutine that calls its own, as each lane has its own.
//
// Its Marshal hands gRPC a buffer the codec reuses for the next call once the call has
// succeeded; after a failed call gRPC may still read it, so make a new codec for the calls
// that follow a failed one (a reactor's lanes do the equivalent without a new codec).
func New(l limits.Limits) encoding.CodecV2 {
	return lanecodec.New(l)
}
