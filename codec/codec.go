// Package codec is prpc's raw-bytes gRPC codec. Package reactor encodes each request once,
// on the goroutine that submits it; the codec hands those bytes to gRPC in a Frame without a
// second marshal or a copy, and decodes a response straight from gRPC's receive buffers into
// the message a Reply names, on the invoker lane that ran the call, refusing one larger than
// the Reply's bound.
//
// Users meet the codec where gRPC hands them a call's messages: unary interceptors and stats
// handlers on a reactor's connection see the request as a *Frame and the reply as a *Reply,
// not as proto messages, and so does a grpc.ClientConnInterface passed as
// reactor.Config.Conn (package reactortest's Backend is one).
//
// The codec's name is "proto", so the wire content-type stays application/grpc+proto and any
// gRPC server understands it. It is passed per call with grpc.ForceCodecV2 and never
// registered globally, because registering it would replace the proto codec of the whole
// process. grpc-go marks ForceCodecV2 experimental.
package codec

import (
	"fmt"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Name is the codec's name, and so the wire content-subtype: "proto".
const Name = "proto"

// Codec is the raw-bytes CodecV2. Marshal takes a *Frame; Unmarshal takes a *Reply. The zero
// value is ready to use.
type Codec struct{}

var _ encoding.CodecV2 = Codec{}

// Frame carries an encoded request, Bytes. Marshal hands Bytes to gRPC through buffers kept
// in the Frame, so that it allocates nothing; gRPC may read them, and Bytes, until its call is
// over — after a failed call even later, from its write queue — so a caller that reuses a
// Frame must take a new one after a failed call.
type Frame struct {
	// Bytes is the encoded request; the caller sets it before the call.
	Bytes []byte

	// What Marshal hands to gRPC: a *SliceBuffer in an interface is a pointer, where a
	// SliceBuffer would be boxed.
	sb  mem.SliceBuffer
	one [1]mem.Buffer
}

// Reply is where Unmarshal decodes a response.
type Reply struct {
	// Msg is the message to decode into; the caller sets it.
	Msg proto.Message
	// Max, if positive, bounds the response's encoded size; package reactor sets it to
	// limits.Limits.MaxResponseBytes, which the error of a larger response names. gRPC's
	// own receive limit, capped at the same value, normally refuses a larger response
	// first.
	Max int
}

// Name returns "proto".
func (Codec) Name() string { return Name }

// Marshal returns the bytes of a *Frame without copying them and without allocating. gRPC may
// read them until the call returns (for retries), and after a failed call even later (see
// Frame), so the caller keeps them unchanged until then.
func (Codec) Marshal(v any) (mem.BufferSlice, error) {
	f, ok := v.(*Frame)
	if !ok {
		return nil, fmt.Errorf("prpc codec: cannot marshal %T: want *codec.Frame", v)
	}
	f.sb = f.Bytes
	f.one[0] = &f.sb
	return f.one[:], nil
}

// Unmarshal decodes data into a *Reply's message. A response over the Reply's Max fails
// with an error naming its size, the limit and Limits.MaxResponseBytes, and nothing is
// decoded. A response in one buffer is decoded in place; one spread over several is first
// joined into a pooled buffer. The decoded message keeps no reference to data.
func (Codec) Unmarshal(data mem.BufferSlice, v any) error {
	r, ok := v.(*Reply)
	if !ok {
		return fmt.Errorf("prpc codec: cannot unmarshal into %T: want *codec.Reply", v)
	}
	if r.Max > 0 && data.Len() > r.Max {
		return fmt.Errorf("prpc codec: response is %d bytes, over the %d-byte limit (Limits.MaxResponseBytes)", data.Len(), r.Max)
	}
	if len(data) == 1 {
		return proto.Unmarshal(data[0].ReadOnlyData(), r.Msg)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), r.Msg)
}
