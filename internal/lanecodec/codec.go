// Package lanecodec is the gRPC codec that a prpc reactor's invoker lanes pass with every call
// they run, each lane its own. It encodes the request on the lane, inside gRPC's call, into a
// buffer the lane reuses from one call to the next, and decodes the response, bounded, on the
// same lane. Since the codec gets the messages themselves, gRPC's unary interceptors and stats
// handlers see the request and response as proto messages, as with plain grpc-go, and so does
// a grpc.ClientConnInterface passed as reactor.Config.Conn. Package codec hands the same codec
// to programs; Err and Forget, the lanes' protocol for failed calls, are theirs alone.
//
// The codec's name is empty, so gRPC sends no content-subtype: the wire content-type is
// application/grpc, which means protobuf, exactly as a plain grpc-go client sends it, and
// gRPC builds no content-type string per call. It is passed per call with grpc.ForceCodecV2 and never
// registered globally, because registering it would replace the proto codec of the whole
// process. grpc-go marks ForceCodecV2 experimental.
//
// Each message type is encoded by a plan worked out once for the type: a flat message (no
// message, group or map fields) in one pass, with no sizing pass first; other messages with
// one sizing pass whose sizes the marshal reuses, as proto.Marshal does; the check for missing
// required fields only where the type can have one. The bytes are those proto.Marshal writes.
package lanecodec

import (
	"fmt"
	"sync"

	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/trixnew/prpc/internal/encode"
	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/limits"
)

// Name is the codec's name, and so the wire content-subtype: none. gRPC then sends the
// content-type application/grpc, which the gRPC protocol defines as protobuf, as a plain
// grpc-go client does.
const Name = ""

// Codec encodes requests and decodes responses within limits. It serves one call at a time:
// each invoker lane of a reactor has its own. Make one with New.
//
// Marshal encodes into a buffer the Codec keeps and hands it to gRPC without a copy, so gRPC
// may read it until its call is over, and after a failed call even later, from its write
// queue: after a call that failed, call Forget before the next Marshal. The buffer slice it
// returns is new for every call: gRPC may still hold it (to free it) after a call that
// succeeded, when an earlier attempt of the call (a transparent retry, or a retry of a
// policy) left it queued on a transport that closes later.
type Codec struct {
	limits limits.Limits // a zero bound: none of the Codec's own

	buf    []byte // the encode buffer, reused from one call to the next
	err    error  // the error of the last Marshal, before gRPC wrapped it
	handed bool   // the last Marshal handed buf to gRPC

	// The plan of the type encoded last, so that a lane running calls of one method finds
	// it without a lookup.
	lastType protoreflect.MessageType
	lastPlan encode.Plan
}

var _ encoding.CodecV2 = (*Codec)(nil)

// handoff is the buffer slice Marshal returns, in one allocation: a *SliceBuffer in an
// interface is a pointer, where a SliceBuffer would be boxed apart from the slice's array.
// gRPC's transport may read it (to free it) after its call returned, so each call has its own.
type handoff struct {
	sb  mem.SliceBuffer
	one [1]mem.Buffer
}

// New returns a Codec that refuses a request over l.MaxRequestBytes and a response over
// l.MaxResponseBytes; a zero bound means no bound of the Codec's own.
func New(l limits.Limits) *Codec {
	return &Codec{limits: l}
}

// Name returns Name, the empty string: no content-subtype.
func (*Codec) Name() string { return Name }

// Marshal encodes v, a proto.Message, into the Codec's buffer, and returns it without a copy.
// A request over the Codec's MaxRequestBytes fails with a *limitcheck.SizeError, and one that does
// not encode (a string field with invalid UTF-8, a missing required field) with the encoder's
// error; either way nothing is sent. gRPC reports a codec's error as an Internal status
// ("grpc: error while marshaling: …"); Err returns it as Marshal returned it.
func (c *Codec) Marshal(v any) (mem.BufferSlice, error) {
	c.err, c.handed = nil, false
	if e, ok := v.(*Encoded); ok {
		return e.handoff(), nil
	}
	m, ok := v.(proto.Message)
	if !ok {
		c.err = fmt.Errorf("prpc codec: cannot marshal %T: want a proto.Message", v)
		return nil, c.err
	}
	if cap(c.buf) > encode.MaxKeptBuffer {
		c.buf = nil // so that one huge request does not pin its memory
	}
	buf, err := c.planOf(m).Append(c.buf, m)
	if err == nil && c.limits.MaxRequestBytes > 0 {
		err = limitcheck.CheckRequest(c.limits, len(buf))
	}
	if err != nil {
		c.err = err
		return nil, err
	}
	c.buf = buf
	c.handed = true
	return handOver(buf), nil
}

// handOver returns buf as a buffer slice for gRPC, without a copy.
func handOver(buf []byte) mem.BufferSlice {
	out := &handoff{sb: buf}
	out.one[0] = &out.sb
	return out.one[:]
}

// Err returns the error of the last Marshal since New or Forget, as Marshal returned it, or
// nil: nil too for a call that failed before gRPC asked for its request.
func (c *Codec) Err() error { return c.err }

// Forget ends a failed call: the Codec forgets the error of its last Marshal, and if that
// Marshal handed gRPC a buffer, which gRPC may still read after a failed call, it leaves the
// buffer to gRPC and encodes the next request into a new one.
func (c *Codec) Forget() {
	if c.handed {
		c.buf = nil
	}
	c.err, c.handed = nil, false
}

// Unmarshal decodes data into v, a proto.Message. A response over the Codec's
// MaxResponseBytes fails with an error naming its size, the limit and Limits.MaxResponseBytes,
// and nothing is decoded. A response in one buffer is decoded in place; one spread over several
// is first joined into a pooled buffer. The decoded message keeps no reference to data.
func (c *Codec) Unmarshal(data mem.BufferSlice, v any) error {
	m, ok := v.(proto.Message)
	if !ok {
		return fmt.Errorf("prpc codec: cannot unmarshal into %T: want a proto.Message", v)
	}
	if limit := c.limits.MaxResponseBytes; limit > 0 && data.Len() > limit {
		return fmt.Errorf("prpc codec: response is %d bytes, over the %d-byte limit (Limits.MaxResponseBytes)", data.Len(), limit)
	}
	if len(data) == 1 {
		return proto.Unmarshal(data[0].ReadOnlyData(), m)
	}
	buf := data.MaterializeToBuffer(mem.DefaultBufferPool())
	defer buf.Free()
	return proto.Unmarshal(buf.ReadOnlyData(), m)
}

// planOf returns the plan of m's type.
func (c *Codec) planOf(m proto.Message) encode.Plan {
	mt := m.ProtoReflect().Type()
	if mt == c.lastType {
		return c.lastPlan
	}
	p := planOfType(mt)
	c.lastType, c.lastPlan = mt, p
	return p
}

// plans holds the plan of every message type encoded so far, by protoreflect.MessageType.
var plans sync.Map

// planOfType returns the encode plan of messages of type mt, working it out on first use.
func planOfType(mt protoreflect.MessageType) encode.Plan {
	if mt == nil {
		return encode.Plan{}
	}
	if p, ok := plans.Load(mt); ok {
		return p.(encode.Plan)
	}
	p := encode.PlanFor(mt.Descriptor())
	plans.Store(mt, p)
	return p
}
