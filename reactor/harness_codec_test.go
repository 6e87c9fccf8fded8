package reactor_test

import (
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"
)

// The fake connections of these tests treat a call's messages as gRPC does: the request is
// encoded, and the response decoded, by the codec the call names (grpc.ForceCodecV2), with the
// errors grpc-go's unary path gives.

// callCodec returns the codec among opts.
func callCodec(opts []grpc.CallOption) encoding.CodecV2 {
	var c encoding.CodecV2
	for _, o := range opts {
		if f, ok := o.(grpc.ForceCodecV2CallOption); ok {
			c = f.CodecV2
		}
	}
	return c
}

// encodeArgs encodes a call's request as gRPC would before sending it.
func encodeArgs(args any, opts []grpc.CallOption) ([]byte, error) {
	bs, err := callCodec(opts).Marshal(args)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "grpc: error while marshaling: %v", err)
	}
	return bs.Materialize(), nil
}

// decodeReply decodes raw, a response's bytes, into reply as gRPC would.
func decodeReply(raw []byte, reply any, opts []grpc.CallOption) error {
	if err := callCodec(opts).Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, reply); err != nil {
		return status.Errorf(codes.Internal, "grpc: failed to unmarshal the received message: %v", err)
	}
	return nil
}
