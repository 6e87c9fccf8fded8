package codec_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/codec"
	"github.com/trixnew/prpc/internal/testpb"
)

func sampleResponse() *testpb.EchoResponse {
	return &testpb.EchoResponse{
		Message:  "héllo, world",
		Payload:  bytes.Repeat([]byte{0, 1, 2, 0xff}, 300),
		Metadata: map[string]string{"x-a": "1", "x-b": "two"},
	}
}

func TestName(t *testing.T) {
	require.Equal(t, "proto", codec.Codec{}.Name())
	require.Equal(t, "proto", codec.Name)
	var _ encoding.CodecV2 = codec.Codec{}
}

func TestMarshalFrameDoesNotCopy(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"bytes", []byte{1, 2, 3, 4}},
		{"large", bytes.Repeat([]byte{7}, 1<<16)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &codec.Frame{Bytes: tt.b}
			bs, err := codec.Codec{}.Marshal(f)
			require.NoError(t, err)
			require.Len(t, bs, 1)
			got := bs[0].ReadOnlyData()
			require.Equal(t, tt.b, got)
			require.Same(t, &tt.b[0], &got[0], "Marshal must not copy")
			bs.Free()
		})
	}

	bs, err := codec.Codec{}.Marshal(&codec.Frame{})
	require.NoError(t, err)
	require.Zero(t, bs.Len())
}

func TestWrongTypes(t *testing.T) {
	c := codec.Codec{}
	for _, v := range []any{
		&testpb.EchoRequest{Message: "x"},
		codec.Frame{Bytes: []byte{1}},
		[]byte{1},
		nil,
		&codec.Reply{},
	} {
		_, err := c.Marshal(v)
		require.Error(t, err, "Marshal(%T)", v)
		require.Contains(t, err.Error(), "*codec.Frame")
	}
	data := mem.BufferSlice{mem.SliceBuffer{}}
	for _, v := range []any{
		&testpb.EchoResponse{},
		codec.Reply{Msg: &testpb.EchoResponse{}},
		nil,
		&codec.Frame{},
	} {
		err := c.Unmarshal(data, v)
		require.Error(t, err, "Unmarshal(%T)", v)
		require.Contains(t, err.Error(), "*codec.Reply")
	}
}

// split cuts b into pieces at the given offsets.
func split(b []byte, at ...int) mem.BufferSlice {
	var out mem.BufferSlice
	prev := 0
	for _, i := range at {
		out = append(out, mem.SliceBuffer(b[prev:i]))
		prev = i
	}
	return append(out, mem.SliceBuffer(b[prev:]))
}

func TestUnmarshal(t *testing.T) {
	want := sampleResponse()
	b, err := proto.Marshal(want)
	require.NoError(t, err)
	n := len(b)

	tests := []struct {
		name string
		data mem.BufferSlice
	}{
		{"single buffer", split(b)},
		{"two buffers", split(b, n/2)},
		{"many buffers", split(b, 1, 2, 3, 10, n/3, n/2, n-1)},
		{"byte by byte", func() mem.BufferSlice {
			at := make([]int, 0, n-1)
			for i := 1; i < n; i++ {
				at = append(at, i)
			}
			return split(b, at...)
		}()},
		{"with empty pieces", split(b, 0, 0, n/2, n/2, n)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, n, tt.data.Len())
			for _, max := range []int{0, n} { // no limit; limit exactly at the size
				got := &testpb.EchoResponse{}
				require.NoError(t, codec.Codec{}.Unmarshal(tt.data, &codec.Reply{Msg: got, Max: max}))
				require.True(t, proto.Equal(want, got), "max %d: got %v", max, got)
			}
		})
	}
}

func TestUnmarshalKeepsNoReference(t *testing.T) {
	want := sampleResponse()
	b, err := proto.Marshal(want)
	require.NoError(t, err)
	for _, cuts := range [][]int{nil, {len(b) / 2}} {
		buf := bytes.Clone(b)
		got := &testpb.EchoResponse{}
		require.NoError(t, codec.Codec{}.Unmarshal(split(buf, cuts...), &codec.Reply{Msg: got}))
		clear(buf) // gRPC reuses its receive buffers once Unmarshal returns
		require.True(t, proto.Equal(want, got))
	}
}

func TestUnmarshalOverMax(t *testing.T) {
	b, err := proto.Marshal(sampleResponse())
	require.NoError(t, err)
	n := len(b)
	for _, data := range []mem.BufferSlice{split(b), split(b, 5, n/2)} {
		got := &testpb.EchoResponse{}
		err := codec.Codec{}.Unmarshal(data, &codec.Reply{Msg: got, Max: n - 1})
		require.EqualError(t, err, fmt.Sprintf("prpc codec: response is %d bytes, over the %d-byte limit (Limits.MaxResponseBytes)", n, n-1))
		require.True(t, proto.Equal(&testpb.EchoResponse{}, got), "nothing is decoded over the limit")
	}
}

func TestUnmarshalInvalid(t *testing.T) {
	tests := []struct {
		name string
		b    []byte
	}{
		{"truncated varint", []byte{0x0a, 0xff}},
		{"length past end", []byte{0x0a, 0x10, 'a'}},
		{"invalid UTF-8 string", []byte{0x0a, 0x01, 0xff}},
		{"field number zero", []byte{0x00, 0x01}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, data := range []mem.BufferSlice{split(tt.b), split(tt.b, 1)} {
				err := codec.Codec{}.Unmarshal(data, &codec.Reply{Msg: &testpb.EchoResponse{}})
				require.Error(t, err)
			}
		})
	}
}

// FuzzUnmarshal feeds arbitrary bytes to Unmarshal, whole and split, and checks that it never
// panics and agrees with proto.Unmarshal.
func FuzzUnmarshal(f *testing.F) {
	seed, _ := proto.Marshal(sampleResponse())
	f.Add(seed, 3)
	f.Add([]byte{}, 0)
	f.Add([]byte{0x0a, 0xff}, 1)
	f.Add([]byte{0x0a, 0x01, 0xff}, 2)
	f.Add([]byte{0x1a, 0x05, 0x0a, 0x01, 'k', 0x12, 0x00}, 4) // a map entry
	f.Add(bytes.Repeat([]byte{0x12, 0x80}, 50), 7)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		want := &testpb.EchoResponse{}
		wantErr := proto.Unmarshal(b, want)

		data := mem.BufferSlice{mem.SliceBuffer(b)}
		if len(b) > 0 {
			if cut < 0 {
				cut = -cut
			}
			cut %= len(b) + 1
			data = mem.BufferSlice{mem.SliceBuffer(b[:cut]), mem.SliceBuffer(b[cut:])}
		}
		for _, d := range []mem.BufferSlice{{mem.SliceBuffer(b)}, data} {
			got := &testpb.EchoResponse{}
			err := codec.Codec{}.Unmarshal(d, &codec.Reply{Msg: got})
			if wantErr != nil {
				require.Error(t, err)
				continue
			}
			require.NoError(t, err)
			require.True(t, proto.Equal(want, got))

			if len(b) > 0 {
				err = codec.Codec{}.Unmarshal(d, &codec.Reply{Msg: &testpb.EchoResponse{}, Max: len(b) - 1})
				require.Error(t, err)
			}
		}
	})
}

// Marshal hands gRPC a Frame's bytes without copying and without allocating, and a Frame
// reused with other bytes hands over those.
func TestMarshalNoAlloc(t *testing.T) {
	buf, err := proto.Marshal(&testpb.EchoRequest{Message: "abc"})
	require.NoError(t, err)
	f := &codec.Frame{Bytes: buf}
	var out mem.BufferSlice
	allocs := testing.AllocsPerRun(100, func() { out, _ = codec.Codec{}.Marshal(f) })
	require.Zero(t, allocs)
	require.Equal(t, buf, out.Materialize())
	require.Same(t, &buf[0], &out[0].ReadOnlyData()[0], "no copy")

	f.Bytes = []byte{1, 2}
	out, err = codec.Codec{}.Marshal(f)
	require.NoError(t, err)
	require.Equal(t, []byte{1, 2}, out.Materialize())
}
