// Package encode encodes requests into buffers their callers keep for reuse: package reactor
// encodes each request, on the goroutine that submits it, into the buffer of a reused call
// record (Plan.Append), and the codec hands those bytes to gRPC without a second marshal or
// a copy.
//
// A Plan is worked out once per request type, from its descriptor, so that each encoding does
// only the passes that type needs: a flat message (no message, group or map fields) is
// written in one pass, with no sizing pass first, and a message that can hold no required
// field skips the check for missing ones. The bytes are those proto.Marshal writes.
package encode

import (
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/runtime/protoiface"
)

// MaxKeptBuffer is the largest encode buffer worth keeping for reuse: a caller that reuses
// buffers should drop larger ones, so that one huge request does not pin its memory.
const MaxKeptBuffer = 64 << 10

// Plan says how to encode messages of one type. The zero Plan encodes any message through
// proto.MarshalOptions, which is always correct; PlanFor gives the cheaper plan of a type.
type Plan struct {
	direct    bool // the type's fast-path methods may be called directly
	flat      bool // no field holds a message: one pass writes it, sizes and all
	checkInit bool // the type can hold a required field, which may be missing
}

// PlanFor returns the plan for messages whose descriptor is md. A nil md gives the zero Plan.
func PlanFor(md protoreflect.MessageDescriptor) Plan {
	if md == nil {
		return Plan{}
	}
	return Plan{
		direct:    true,
		flat:      flat(md),
		checkInit: mayNeedInit(md, map[protoreflect.FullName]bool{}),
	}
}

// Append encodes m onto dst[:0] and returns the result; it allocates only when dst has too
// little capacity. On error it returns dst[:0] and the error: a string field that holds
// invalid UTF-8 where its syntax requires valid UTF-8 gives a *UTF8Error naming the field,
// found by walking m only then. m must be of the type the plan was made for, or the plan must
// be the zero Plan.
func (p Plan) Append(dst []byte, m proto.Message) ([]byte, error) {
	out, err := p.append(dst[:0], m)
	if err != nil {
		return dst[:0], nameInvalidUTF8(err, m.ProtoReflect())
	}
	return out, nil
}

func (p Plan) append(dst []byte, m proto.Message) ([]byte, error) {
	if !p.direct {
		return proto.MarshalOptions{}.MarshalAppend(dst, m)
	}
	msg := m.ProtoReflect()
	methods := msg.ProtoMethods()
	if !msg.IsValid() || methods == nil || methods.Marshal == nil || methods.Size == nil {
		return proto.MarshalOptions{}.MarshalAppend(dst, m)
	}
	in := protoiface.MarshalInput{Message: msg, Buf: dst}
	if !p.flat {
		// Size caches the size of every nested message, so that the marshal pass writes
		// their lengths without sizing them again, as proto.Marshal does.
		size := methods.Size(protoiface.SizeInput{Message: msg}).Size
		if cap(dst) < size {
			in.Buf = make([]byte, 0, size)
		}
		in.Flags = protoiface.MarshalUseCachedSize
	}
	out, err := methods.Marshal(in)
	if err != nil {
		return nil, err
	}
	if p.checkInit {
		if err := proto.CheckInitialized(m); err != nil {
			return nil, err
		}
	}
	return out.Buf, nil
}

// flat reports whether no field of md holds a message: such a message's encoding needs no
// length computed ahead of the bytes it prefixes.
func flat(md protoreflect.MessageDescriptor) bool {
	if md.ExtensionRanges().Len() > 0 {
		return false
	}
	fields := md.Fields()
	for i := range fields.Len() {
		switch fields.Get(i).Kind() {
		case protoreflect.MessageKind, protoreflect.GroupKind:
			return false
		}
	}
	return true
}

// mayNeedInit reports whether a message of type md can lack a required field: md or a message
// reachable from its fields declares one, or md can carry extensions, which may. seen breaks
// cycles.
func mayNeedInit(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool) bool {
	if seen[md.FullName()] {
		return false
	}
	seen[md.FullName()] = true
	if md.RequiredNumbers().Len() > 0 || md.ExtensionRanges().Len() > 0 {
		return true
	}
	fields := md.Fields()
	for i := range fields.Len() {
		f := fields.Get(i)
		if f.Cardinality() == protoreflect.Required {
			return true
		}
		if f.Message() != nil && mayNeedInit(f.Message(), seen) {
			return true
		}
	}
	return false
}
