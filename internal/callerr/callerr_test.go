package callerr_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/trixnew/prpc/internal/callerr"
)

func TestNewTakesTheKindsCode(t *testing.T) {
	tests := []struct {
		kind callerr.Kind
		code codes.Code
	}{
		{callerr.Closed, codes.Canceled},
		{callerr.Overloaded, codes.ResourceExhausted},
		{callerr.Timeout, codes.DeadlineExceeded},
		{callerr.Cancelled, codes.Canceled},
		{callerr.TooLarge, codes.ResourceExhausted},
		{callerr.InvalidArgument, codes.InvalidArgument},
		{callerr.Unavailable, codes.Unavailable},
		{callerr.Shed, codes.ResourceExhausted},
	}
	require.Len(t, tests, callerr.NumKinds-1, "every kind but None is listed")
	for _, tt := range tests {
		t.Run(tt.code.String(), func(t *testing.T) {
			cause := errors.New("why")
			e := callerr.New(tt.kind, "/S/M", "why it failed", cause)
			require.Equal(t, tt.kind, e.Kind())
			require.Equal(t, tt.code, tt.kind.Code())
			require.Equal(t, tt.code, e.Status().Code())
			require.Equal(t, "why it failed", e.Status().Message())
			require.Equal(t, "/S/M", e.Method())
			require.Nil(t, e.Trailer(), "local failures carry no trailer")
			require.Same(t, cause, e.Cause())
		})
	}
	require.Equal(t, codes.Unknown, callerr.None.Code())
	require.Equal(t, codes.Unknown, callerr.Kind(200).Code())
}

func TestNewPanicsOnInvalidKind(t *testing.T) {
	for _, k := range []callerr.Kind{callerr.None, callerr.Kind(callerr.NumKinds), 200} {
		require.Panics(t, func() { callerr.New(k, "/S/M", "msg", nil) }, "kind %d", k)
	}
}

func TestFromStatusKeepsStatus(t *testing.T) {
	detail := durationpb.New(3 * time.Second)
	st, err := status.New(codes.NotFound, "player 42 not found").WithDetails(detail)
	require.NoError(t, err)
	trailer := metadata.Pairs("x-trailer", "done", "x-other", "1")

	e := callerr.FromStatus("/pkg.S/Get", st.Err(), trailer)
	require.Equal(t, codes.NotFound, e.Status().Code())
	require.Equal(t, "player 42 not found", e.Status().Message())
	require.Equal(t, "/pkg.S/Get", e.Method())
	require.Equal(t, trailer, e.Trailer())
	require.Equal(t, callerr.None, e.Kind())
	require.Nil(t, e.Cause())

	details := e.Status().Details()
	require.Len(t, details, 1)
	d, ok := details[0].(*durationpb.Duration)
	require.True(t, ok, "detail type %T", details[0])
	require.True(t, proto.Equal(detail, d))
}

func TestFromStatusUnknownCode(t *testing.T) {
	for _, code := range []codes.Code{99, 17, 1<<32 - 1} {
		t.Run(fmt.Sprint(uint32(code)), func(t *testing.T) {
			st, err := status.New(code, "odd").WithDetails(durationpb.New(time.Second))
			require.NoError(t, err)
			e := callerr.FromStatus("/S/M", st.Err(), nil)
			require.Equal(t, codes.Unknown, e.Status().Code())
			require.Equal(t, fmt.Sprintf("server sent unknown status code %d: odd", int32(code)), e.Status().Message(),
				"the original code is named and the message kept")
			require.Len(t, e.Status().Details(), 1, "details are kept")
			require.Equal(t, callerr.None, e.Kind())
		})
	}
}

// Every code from 1 to 16 is kept, and only DeadlineExceeded and Unavailable get a kind by
// their code alone.
func TestFromStatusKnownCodes(t *testing.T) {
	want := map[codes.Code]callerr.Kind{
		codes.DeadlineExceeded: callerr.Timeout,
		codes.Unavailable:      callerr.Unavailable,
	}
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		e := callerr.FromStatus("/S/M", status.Error(c, "m"), nil)
		require.Equal(t, c, e.Status().Code(), "code %v", c)
		require.Equal(t, "m", e.Status().Message())
		require.Equal(t, want[c], e.Kind(), "code %v", c)
	}
}

// A ResourceExhausted status is TooLarge only when gRPC's own size limit raised it.
func TestFromStatusResourceExhausted(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want callerr.Kind
	}{
		{"grpc receive limit", "grpc: received message larger than max (2000 vs. 1024)", callerr.TooLarge},
		{"grpc receive limit after decompression", "grpc: received message after decompression larger than max (5000 vs. 1024)", callerr.TooLarge},
		{"grpc receive limit after decompression, legacy decompressor", "grpc: message after decompression larger than max (5000 vs. 1024)", callerr.TooLarge},
		{"grpc receive limit after decompression, no size", "grpc: received message after decompression larger than max 1024", callerr.TooLarge},
		{"grpc send limit", "grpc: trying to send message larger than max (2000 vs. 1024)", callerr.TooLarge},
		{"grpc send limit, as grpc-go words it", "trying to send message larger than max (2000 vs. 1024)", callerr.TooLarge},
		{"server quota", "quota exceeded", callerr.None},
		{"server quota naming grpc", "backend says: grpc: received message larger than max (1 vs. 0)", callerr.None},
		{"empty", "", callerr.None},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := callerr.FromStatus("/S/M", status.Error(codes.ResourceExhausted, tt.msg), nil)
			require.Equal(t, codes.ResourceExhausted, e.Status().Code())
			require.Equal(t, tt.msg, e.Status().Message())
			require.Equal(t, tt.want, e.Kind())
		})
	}

	// The same message under another code is not a size limit.
	e := callerr.FromStatus("/S/M", status.Error(codes.Internal, "grpc: received message larger than max (2000 vs. 1024)"), nil)
	require.Equal(t, callerr.None, e.Kind())
}

func TestFromStatusCapsMessage(t *testing.T) {
	const max = callerr.MaxMessageBytes
	require.Equal(t, 4096, max, "the cap calls.Error documents")
	tests := []struct {
		name       string
		msg        string
		wantPrefix string // the kept part; empty means the message is kept whole
	}{
		{"short", "short message", ""},
		{"exactly at limit", strings.Repeat("a", max), ""},
		{"one over", strings.Repeat("a", max+1), strings.Repeat("a", max)},
		{"5000 bytes", strings.Repeat("b", 5000), strings.Repeat("b", max)},
		// "é" is 2 bytes and starts at max-1, so a cut at max would split it.
		{"2-byte rune across the limit", strings.Repeat("a", max-1) + strings.Repeat("é", 500), strings.Repeat("a", max-1)},
		// "€" is 3 bytes: starting at max-1 or max-2, a cut at max splits it.
		{"3-byte rune, 1 byte before", strings.Repeat("a", max-1) + strings.Repeat("€", 400), strings.Repeat("a", max-1)},
		{"3-byte rune, 2 bytes before", strings.Repeat("a", max-2) + strings.Repeat("€", 400), strings.Repeat("a", max-2)},
		// "😀" is 4 bytes.
		{"4-byte rune, 3 bytes before", strings.Repeat("a", max-3) + strings.Repeat("😀", 300), strings.Repeat("a", max-3)},
		// A rune ending exactly at the limit is kept.
		{"rune ending at the limit", strings.Repeat("a", max-2) + "é" + strings.Repeat("z", 900), strings.Repeat("a", max-2) + "é"},
		{"all multi-byte", strings.Repeat("€", 5000/3+1), strings.Repeat("€", max/3)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := callerr.FromStatus("/S/M", status.Error(codes.Internal, tt.msg), nil)
			got := e.Status().Message()
			if tt.wantPrefix == "" {
				require.Equal(t, tt.msg, got)
				return
			}
			marker := fmt.Sprintf("…[%d bytes cut]", len(tt.msg)-len(tt.wantPrefix))
			require.Equal(t, tt.wantPrefix+marker, got)
			require.LessOrEqual(t, len(got)-len(marker), max)
			require.True(t, utf8.ValidString(got), "the cut must not split a UTF-8 sequence")
			require.Equal(t, codes.Internal, e.Status().Code())
		})
	}
}

func TestFromStatusOfNonStatusError(t *testing.T) {
	e := callerr.FromStatus("/S/M", errors.New("transport broke"), nil)
	require.Equal(t, codes.Unknown, e.Status().Code())
	require.Contains(t, e.Status().Message(), "transport broke")
	require.Equal(t, callerr.None, e.Kind())
}

// handshake is a callerr.Handshake, as *calls.HandshakeError is.
type handshake struct{ summary, text string }

func (h *handshake) Error() string   { return h.text }
func (h *handshake) Summary() string { return h.summary }

func TestFromHandshake(t *testing.T) {
	he := &handshake{"TLS handshake failed: server certificate not valid for the server name", "x509: certificate is not valid for wrong.test"}
	st, err := status.New(codes.Unavailable, `connection error: desc = "transport: authentication handshake failed"`).
		WithDetails(durationpb.New(1))
	require.NoError(t, err)
	trailer := metadata.Pairs("k", "v")
	e := callerr.FromHandshake("/s/M", st.Err(), trailer, he)

	require.Equal(t, codes.Unavailable, e.Status().Code(), "the code stays Unavailable")
	require.Equal(t, he.summary+`: connection error: desc = "transport: authentication handshake failed"`, e.Status().Message())
	require.Len(t, e.Status().Details(), 1, "details kept")
	require.Equal(t, trailer, e.Trailer())
	require.Equal(t, callerr.Unavailable, e.Kind())
	require.Same(t, he, e.Cause())

	// The classification does not escape the message cap.
	long := status.Error(codes.Unavailable, strings.Repeat("x", 2*callerr.MaxMessageBytes))
	e = callerr.FromHandshake("/s/M", long, nil, he)
	require.LessOrEqual(t, len(e.Status().Message()), callerr.MaxMessageBytes+64)
	require.True(t, strings.HasPrefix(e.Status().Message(), he.summary+": x"))

	require.Panics(t, func() { callerr.FromHandshake("/s/M", long, nil, nil) })
}
