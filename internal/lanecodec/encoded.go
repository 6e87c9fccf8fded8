package lanecodec

import (
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
)

// Encoded is a request encoded before its transport call: the request of a coalesced
// transport call, which serves several calls with one encoding. Marshal sends Bytes as they
// are, without a copy and without the Codec's checks (whoever encoded them applied the
// limits), and leaves the Codec's own buffer alone. gRPC may read Bytes until the call is
// over, and after a failed call even later: they must not be modified once handed over.
//
// It embeds the request as a message, so that gRPC's unary interceptors and stats handlers,
// which see what Invoke was given, see a proto.Message with the request's fields: a *Encoded,
// not the request's own type.
type Encoded struct {
	proto.Message        // the request the bytes encode, which nothing modifies
	Bytes         []byte // its encoding
}

// handoff returns e's bytes as a buffer slice for gRPC.
func (e *Encoded) handoff() mem.BufferSlice { return handOver(e.Bytes) }
