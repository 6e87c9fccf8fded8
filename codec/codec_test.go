package codec_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/codec"
	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
)

// New gives programs the lanes' own codec, unnamed, within the limits it is given.
func TestNew(t *testing.T) {
	c := codec.New(limits.Limits{MaxRequestBytes: 64, MaxResponseBytes: 64})
	require.IsType(t, &lanecodec.Codec{}, c, "the codec the lanes pass, not a copy of it")
	require.Empty(t, c.Name(), "a name would be sent as a content-subtype")

	req := &testpb.EchoRequest{Message: "héllo", Payload: []byte{1, 2, 3}}
	bs, err := c.Marshal(req)
	require.NoError(t, err)
	want, err := proto.Marshal(req)
	require.NoError(t, err)
	require.Equal(t, want, bs.Materialize())

	got := &testpb.EchoRequest{}
	require.NoError(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(want)}, got))
	require.True(t, proto.Equal(req, got))

	big := &testpb.EchoRequest{Payload: make([]byte, 100)}
	_, err = c.Marshal(big)
	require.ErrorContains(t, err, "Limits.MaxRequestBytes")
	raw, err := proto.Marshal(big)
	require.NoError(t, err)
	require.ErrorContains(t, c.Unmarshal(mem.BufferSlice{mem.SliceBuffer(raw)}, &testpb.EchoRequest{}), "Limits.MaxResponseBytes")
}
