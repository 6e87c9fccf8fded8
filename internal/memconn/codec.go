// Package memconn treats a call's messages as gRPC's unary path does (Encode, Decode), for
// connections that run calls in memory: reactortest's Backend and the fake connections of
// package reactor's tests. Package reactor itself never imports it; it knows such a
// connection only as a stand-in (internal/standin).
package memconn

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

// Encode encodes a call's request, args, as gRPC's unary path does before sending it: with
// the codec the call names among opts (grpc.ForceCodecV2, as a reactor's invoker lanes pass
// theirs), or else with proto.Marshal. Its errors are grpc-go's, with code Internal.
func Encode(args any, opts []grpc.CallOption) ([]byte, error) {
	if c := callCodec(opts); c != nil {
		bs, err := c.Marshal(args)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
		}
		return bs.Materialize(), nil
	}
	m, ok := args.(proto.Message)
	if !ok {
		return nil, status.Errorf(codes.Internal, "grpc: error while marshaling: request is %T, want a proto.Message", args)
	}
	raw, err := proto.Marshal(m)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	return raw, nil
}

// Decode decodes raw, a response's bytes, into reply as gRPC's unary path does once it has
// received them: with the codec the call names among opts, or else with proto.Unmarshal. Its
// errors are grpc-go's, with code Internal.
func Decode(raw []byte, reply any, opts []grpc.CallOption) error {
	var err error
	if c := callCodec(opts); c != nil {
		err = c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, reply)
	} else if m, ok := reply.(proto.Message); ok {
		err = proto.Unmarshal(raw, m)
	} else {
		return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: reply is %T, want a proto.Message", reply)
	}
	if err != nil {
		return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return nil
}

// callCodec returns the codec among opts (grpc.ForceCodecV2), or nil.
func callCodec(opts []grpc.CallOption) encoding.CodecV2 {
	if f, ok := LastOption[grpc.ForceCodecV2CallOption](opts); ok {
		return f.CodecV2
	}
	return nil
}

// LastOption returns the last of opts that is a T, as gRPC applies them (the last wins), and
// whether there is one.
func LastOption[T grpc.CallOption](opts []grpc.CallOption) (last T, ok bool) {
	for _, o := range opts {
		if t, is := o.(T); is {
			last, ok = t, true
		}
	}
	return last, ok
}
