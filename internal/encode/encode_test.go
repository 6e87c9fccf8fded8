package encode_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/codec"
	"github.com/trixnew/prpc/internal/encode"
	"github.com/trixnew/prpc/internal/testpb"
)

func TestEncodeRelease(t *testing.T) {
	msgs := []proto.Message{
		&testpb.EchoRequest{Message: "first", Payload: bytes.Repeat([]byte{9}, 1000), DelayMs: 5},
		&testpb.EchoRequest{Message: "x"},                                    // smaller: a reused buffer must not leak old bytes
		&testpb.EchoRequest{},                                                // empty
		&testpb.EchoRequest{Payload: bytes.Repeat([]byte{1}, 100<<10)},       // above the pooled size
		&testpb.EchoRequest{FailCode: 5, FailMessage: "m", ResponseBytes: 7}, // after a large one
		&testpb.EchoResponse{Message: "héllo", Metadata: map[string]string{"x-a": "1", "x-b": "two"}},
	}
	var buf []byte // reused, as a call record reuses it
	for round := 0; round < 3; round++ {
		for i, m := range msgs {
			size := proto.Size(m)
			want, err := proto.Marshal(m)
			require.NoError(t, err)
			require.Equal(t, len(want), size)

			buf, err = encode.Append(buf, m)
			require.NoError(t, err)
			require.Len(t, buf, size, "msg %d", i)
			if _, ok := m.(*testpb.EchoRequest); ok { // no map field: the encoding is deterministic
				require.True(t, bytes.Equal(want, buf), "msg %d: encoded bytes differ", i)
			}

			// The bytes the codec hands to gRPC decode back to the message.
			bs, err := codec.Codec{}.Marshal(&codec.Frame{Bytes: buf})
			require.NoError(t, err)
			got := m.ProtoReflect().Type().New().Interface()
			require.NoError(t, codec.Codec{}.Unmarshal(bs, &codec.Reply{Msg: got}))
			require.True(t, proto.Equal(m, got), "msg %d", i)
		}
	}
}

func TestAppendErrorReportsAndKeepsTheBuffer(t *testing.T) {
	bad := &testpb.EchoRequest{Message: "\xff"} // proto3 strings must be valid UTF-8
	buf, err := encode.Append(make([]byte, 0, 64), bad)
	require.Error(t, err)
	require.Empty(t, buf)
	require.Equal(t, 64, cap(buf), "the caller's storage comes back for reuse")

	// The buffer is still usable afterwards.
	good := &testpb.EchoRequest{Message: "ok"}
	buf, err = encode.Append(buf, good)
	require.NoError(t, err)
	want, _ := proto.Marshal(good)
	require.Equal(t, want, buf)
}
