package lanecodec_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
)

func sampleResponse() *testpb.EchoResponse {
	return &testpb.EchoResponse{
		Message:  "héllo, world",
		Payload:  bytes.Repeat([]byte{0, 1, 2, 0xff}, 300),
		Metadata: map[string]string{"x-a": "1", "x-b": "two"},
	}
}

func TestName(t *testing.T) {
	require.Empty(t, lanecodec.New(limits.Limits{}).Name(), "a name would be sent as a content-subtype")
	require.Empty(t, lanecodec.Name)
	var _ encoding.CodecV2 = lanecodec.New(limits.Limits{})
}

// Marshal writes the bytes proto.Marshal writes, for messages of several types in turn, into
// a buffer it reuses: once the buffer is large enough, it allocates only the buffer slice it
// hands to gRPC.
func TestMarshal(t *testing.T) {
	msgs := []proto.Message{
		&testpb.EchoRequest{Message: "héllo", Payload: []byte{1, 2, 3}, DelayMs: 7, Block: true},
		&testpb.EchoRequest{},
		sampleResponse(),
		&testpb.EchoRequest{Message: strings.Repeat("x", 1000)},
	}
	c := lanecodec.New(limits.Limits{})
	for round := range 3 {
		for i, m := range msgs {
			bs, err := c.Marshal(m)
			require.NoError(t, err)
			require.NoError(t, c.Err())
			got := bs.Materialize()
			require.Len(t, got, proto.Size(m), "round %d, msg %d", round, i)
			back := m.ProtoReflect().Type().New().Interface()
			require.NoError(t, proto.Unmarshal(got, back))
			require.True(t, proto.Equal(m, back), "round %d, msg %d", round, i)
			if i != 2 { // a map's entries may come in another order
				want, err := proto.Marshal(m)
				require.NoError(t, err)
				require.True(t, bytes.Equal(want, got), "round %d, msg %d", round, i)
			}
		}
	}
	m := msgs[0]
	allocs := testing.AllocsPerRun(100, func() { _, _ = c.Marshal(m) })
	require.Equal(t, 1.0, allocs, "the bytes are reused; only the buffer slice handed to gRPC is new")
}

// A request over the Codec's MaxRequestBytes, or one that does not encode, is not marshalled:
// Marshal and Err return the error, which names the fix.
func TestMarshalRefuses(t *testing.T) {
	req := &testpb.EchoRequest{Message: "abcdef"}
	size := proto.Size(req)
	tests := []struct {
		name    string
		max     int
		req     proto.Message
		wantErr string
	}{
		{"over the limit", size - 1, req, fmt.Sprintf("request is %d bytes, over the %d-byte limit (Limits.MaxRequestBytes)", size, size-1)},
		{"invalid UTF-8", 0, &testpb.EchoRequest{Message: "\xff"}, "string field prpctest.EchoRequest.message contains invalid UTF-8"},
		{"not a message", 0, nil, "prpc codec: cannot marshal <nil>: want a proto.Message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := lanecodec.New(limits.Limits{MaxRequestBytes: tc.max})
			var v any
			if tc.req != nil {
				v = tc.req
			}
			bs, err := c.Marshal(v)
			require.Nil(t, bs)
			require.ErrorContains(t, err, tc.wantErr)
			require.Same(t, err, c.Err())
			if tc.name == "over the limit" {
				var se *limitcheck.SizeError
				require.ErrorAs(t, err, &se)
			}
			_, err = lanecodec.New(limits.Limits{}).Marshal(req)
			require.NoError(t, err)
		})
	}
	// At the limit exactly, it is sent.
	_, err := lanecodec.New(limits.Limits{MaxRequestBytes: size}).Marshal(req)
	require.NoError(t, err)
}

// After Forget, the bytes handed to gRPC for the last call stay as they were: the next
// Marshal encodes into a new buffer.
func TestForget(t *testing.T) {
	c := lanecodec.New(limits.Limits{})
	bs, err := c.Marshal(&testpb.EchoRequest{Message: "first"})
	require.NoError(t, err)
	first := bs[0].ReadOnlyData()
	want := bytes.Clone(first)
	c.Forget()
	_, err = c.Marshal(&testpb.EchoRequest{Message: "other"})
	require.NoError(t, err)
	require.Equal(t, want, first, "the forgotten buffer was not written again")

	// Without Forget, the bytes are reused, but not the buffer slice handed to gRPC, which
	// may still hold it after a call that succeeded on a retry (to free it): the next Marshal
	// writes nothing gRPC reads of the last one's buffer slice.
	third, err := c.Marshal(&testpb.EchoRequest{Message: "third call"})
	require.NoError(t, err)
	thirdLen := third[0].Len()
	fourth, err := c.Marshal(&testpb.EchoRequest{Message: "fourth"})
	require.NoError(t, err)
	require.Same(t, &third[0].ReadOnlyData()[0], &fourth[0].ReadOnlyData()[0], "the bytes are reused")
	require.NotSame(t, &third[0], &fourth[0], "the buffer slice is reused")
	require.Equal(t, thirdLen, third[0].Len(), "the next Marshal changed the last one's buffer slice")
}

// Forget clears the error of the last Marshal, so that a later call that fails before gRPC
// asks for its request does not report it; after a Marshal that failed, it keeps the buffer,
// which gRPC never saw.
func TestForgetClearsTheError(t *testing.T) {
	c := lanecodec.New(limits.Limits{MaxRequestBytes: 8})
	_, err := c.Marshal(&testpb.EchoRequest{Message: "a request over eight bytes"})
	var se *limitcheck.SizeError
	require.ErrorAs(t, err, &se)
	require.Same(t, err, c.Err())
	c.Forget()
	require.NoError(t, c.Err(), "a call that never reaches Marshal reports no encoding error")

	bs, err := c.Marshal(&testpb.EchoRequest{Message: "a"})
	require.NoError(t, err)
	first := bs[0].ReadOnlyData()
	_, err = c.Marshal(&testpb.EchoRequest{Message: "a request over eight bytes"})
	require.Error(t, err)
	c.Forget() // the failed Marshal handed nothing to gRPC: the buffer stays the Codec's
	bs, err = c.Marshal(&testpb.EchoRequest{Message: "b"})
	require.NoError(t, err)
	require.Same(t, &first[0], &bs[0].ReadOnlyData()[0], "the buffer is reused")
}

func TestWrongTypes(t *testing.T) {
	c := lanecodec.New(limits.Limits{})
	for _, v := range []any{[]byte{1}, nil, "x"} {
		_, err := c.Marshal(v)
		require.ErrorContains(t, err, "want a proto.Message", "Marshal(%T)", v)
		err = c.Unmarshal(mem.BufferSlice{mem.SliceBuffer{}}, v)
		require.ErrorContains(t, err, "want a proto.Message", "Unmarshal(%T)", v)
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
				require.NoError(t, lanecodec.New(limits.Limits{MaxResponseBytes: max}).Unmarshal(tt.data, got))
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
		require.NoError(t, lanecodec.New(limits.Limits{}).Unmarshal(split(buf, cuts...), got))
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
		err := lanecodec.New(limits.Limits{MaxResponseBytes: n - 1}).Unmarshal(data, got)
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
				err := lanecodec.New(limits.Limits{}).Unmarshal(data, &testpb.EchoResponse{})
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
			err := lanecodec.New(limits.Limits{}).Unmarshal(d, got)
			if wantErr != nil {
				require.Error(t, err)
				continue
			}
			require.NoError(t, err)
			require.True(t, proto.Equal(want, got))

			if len(b) > 0 {
				err = lanecodec.New(limits.Limits{MaxResponseBytes: len(b) - 1}).Unmarshal(d, &testpb.EchoResponse{})
				require.Error(t, err)
			}
		}
	})
}

// TestEncodedSentAsIs checks that a request encoded beforehand (Encoded) goes out as its
// bytes, without the Codec's checks, and leaves the Codec's buffer and error alone.
func TestEncodedSentAsIs(t *testing.T) {
	c := lanecodec.New(limits.Limits{MaxRequestBytes: 4})
	raw := []byte("already encoded, over the limit")
	out, err := c.Marshal(&lanecodec.Encoded{Message: &testpb.EchoRequest{Message: "x"}, Bytes: raw})
	require.NoError(t, err)
	require.Equal(t, raw, out.Materialize())
	require.NoError(t, c.Err())
}
