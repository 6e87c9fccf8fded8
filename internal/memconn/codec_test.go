package memconn_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/internal/memconn"
)

// Encode and Decode round-trip a message with the codec a call names, and without one, and
// fail as gRPC's unary path does, with code Internal.
func TestEncodeDecode(t *testing.T) {
	withCodec := []grpc.CallOption{grpc.ForceCodecV2(encoding.GetCodecV2(proto.Name))}
	for _, tt := range []struct {
		name string
		opts []grpc.CallOption
	}{
		{"the call's codec", withCodec},
		{"no codec: proto", nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			raw, err := memconn.Encode(wrapperspb.String("hello"), tt.opts)
			require.NoError(t, err)
			var out wrapperspb.StringValue
			require.NoError(t, memconn.Decode(raw, &out, tt.opts))
			require.Equal(t, "hello", out.GetValue())
		})
	}
}

func TestEncodeDecodeErrors(t *testing.T) {
	withCodec := []grpc.CallOption{grpc.ForceCodecV2(encoding.GetCodecV2(proto.Name))}
	garbage := []byte{0xff}
	for _, tt := range []struct {
		name string
		err  func() error
		want string
	}{
		{"request not a message, call's codec", func() error { _, err := memconn.Encode("text", withCodec); return err }, "grpc: error while marshaling"},
		{"request not a message, no codec", func() error { _, err := memconn.Encode("text", nil); return err }, "grpc: error while marshaling: request is string"},
		{"bad bytes, call's codec", func() error { return memconn.Decode(garbage, &wrapperspb.StringValue{}, withCodec) }, "grpc: failed to unmarshal the received message"},
		{"bad bytes, no codec", func() error { return memconn.Decode(garbage, &wrapperspb.StringValue{}, nil) }, "grpc: failed to unmarshal the received message"},
		{"reply not a message, no codec", func() error { return memconn.Decode(nil, new(string), nil) }, "reply is *string"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			require.Equal(t, codes.Internal, status.Code(err), "%v", err)
			require.ErrorContains(t, err, tt.want)
		})
	}
}
