package calls_test

import (
	"context"
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

	"github.com/trixnew/prpc/calls"
)

var sentinels = []struct {
	name string
	err  error
	code codes.Code
}{
	{"ErrClosed", calls.ErrClosed, codes.Canceled},
	{"ErrOverloaded", calls.ErrOverloaded, codes.ResourceExhausted},
	{"ErrTimeout", calls.ErrTimeout, codes.DeadlineExceeded},
	{"ErrCancelled", calls.ErrCancelled, codes.Canceled},
	{"ErrTooLarge", calls.ErrTooLarge, codes.ResourceExhausted},
	{"ErrInvalidArgument", calls.ErrInvalidArgument, codes.InvalidArgument},
	{"ErrUnavailable", calls.ErrUnavailable, codes.Unavailable},
}

// requireMatchesOnly asserts that err matches want (nil: no sentinel) and no other sentinel.
func requireMatchesOnly(t *testing.T, err, want error) {
	t.Helper()
	for _, s := range sentinels {
		if s.err == want {
			require.ErrorIs(t, err, s.err, "want a match with %s", s.name)
		} else {
			require.NotErrorIs(t, err, s.err, "unexpected match with %s", s.name)
		}
	}
}

func TestSentinelCodes(t *testing.T) {
	for _, s := range sentinels {
		t.Run(s.name, func(t *testing.T) {
			require.Equal(t, s.code, status.Code(s.err))
			st, ok := status.FromError(s.err)
			require.True(t, ok)
			require.Equal(t, s.code, st.Code())
			require.True(t, strings.HasPrefix(s.err.Error(), "prpc: "), s.err.Error())
		})
	}
}

func TestNewErrorMatchesItsSentinelOnly(t *testing.T) {
	for _, s := range sentinels {
		t.Run(s.name, func(t *testing.T) {
			e := calls.NewError(s.err, "/S/M", "why it failed", nil)
			requireMatchesOnly(t, e, s.err)
			require.Equal(t, s.err, e.Kind())
			require.Equal(t, s.code, e.Code())
			require.Equal(t, s.code, status.Code(e))
			require.Equal(t, "why it failed", e.Message())
			require.Equal(t, "/S/M", e.Method())
			require.Nil(t, e.Trailer(), "local failures carry no trailer")
			require.Nil(t, errors.Unwrap(e))
			require.Equal(t, fmt.Sprintf("prpc: /S/M: %s: why it failed", s.code), e.Error())

			// Wrapped, it still matches and status.Code still works.
			wrapped := fmt.Errorf("context: %w", e)
			require.ErrorIs(t, wrapped, s.err)
			require.Equal(t, s.code, status.Code(wrapped))
			var ce *calls.Error
			require.ErrorAs(t, wrapped, &ce)
			require.Same(t, e, ce)
		})
	}
}

func TestNewErrorPanicsOnNonSentinel(t *testing.T) {
	tests := []struct {
		name string
		kind error
	}{
		{"plain error", errors.New("boom")},
		{"nil", nil},
		{"calls.Error", calls.NewError(calls.ErrTimeout, "/S/M", "x", nil)},
		{"wrapped sentinel", fmt.Errorf("w: %w", calls.ErrTimeout)},
		{"context error", context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Panics(t, func() { calls.NewError(tt.kind, "/S/M", "msg", nil) })
		})
	}
}

func TestErrorUnwrapReturnsCause(t *testing.T) {
	cause := context.DeadlineExceeded
	e := calls.NewError(calls.ErrClosed, "/S/M", "cut off", cause)
	require.Equal(t, cause, errors.Unwrap(e))
	require.ErrorIs(t, e, context.DeadlineExceeded)
	require.ErrorIs(t, e, calls.ErrClosed)
	// The cause does not change the code or the sentinel.
	require.Equal(t, codes.Canceled, e.Code())
	requireMatchesOnly(t, e, calls.ErrClosed)

	other := errors.New("custom cause")
	e = calls.NewError(calls.ErrCancelled, "/S/M", "parent done", other)
	require.Same(t, other, errors.Unwrap(e))
	require.ErrorIs(t, e, other)
}

func TestStatusErrorKeepsStatus(t *testing.T) {
	detail := durationpb.New(3 * time.Second)
	st, err := status.New(codes.NotFound, "player 42 not found").WithDetails(detail)
	require.NoError(t, err)
	trailer := metadata.Pairs("x-trailer", "done", "x-other", "1")

	e := calls.StatusError("/pkg.S/Get", st.Err(), trailer)
	require.Equal(t, codes.NotFound, e.Code())
	require.Equal(t, codes.NotFound, status.Code(e))
	require.Equal(t, "player 42 not found", e.Message())
	require.Equal(t, "/pkg.S/Get", e.Method())
	require.Equal(t, trailer, e.Trailer())
	require.Nil(t, e.Kind())
	requireMatchesOnly(t, e, nil)
	require.Equal(t, "prpc: /pkg.S/Get: NotFound: player 42 not found", e.Error())

	got, ok := status.FromError(e)
	require.True(t, ok)
	details := got.Details()
	require.Len(t, details, 1)
	d, ok := details[0].(*durationpb.Duration)
	require.True(t, ok, "detail type %T", details[0])
	require.True(t, proto.Equal(detail, d))
	require.Equal(t, 3*time.Second, d.AsDuration())
}

func TestStatusErrorUnknownCode(t *testing.T) {
	tests := []struct {
		name string
		code codes.Code
	}{
		{"99", codes.Code(99)},
		{"17", codes.Code(17)},
		{"max uint32", codes.Code(1<<32 - 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, err := status.New(tt.code, "odd").WithDetails(durationpb.New(time.Second))
			require.NoError(t, err)
			e := calls.StatusError("/S/M", st.Err(), nil)
			require.Equal(t, codes.Unknown, e.Code())
			require.Equal(t, codes.Unknown, status.Code(e))
			require.Contains(t, e.Message(), fmt.Sprint(int32(tt.code)), "the original code is mentioned")
			require.Contains(t, e.Message(), "odd", "the original message is kept")
			require.Len(t, e.GRPCStatus().Details(), 1, "details are kept")
			requireMatchesOnly(t, e, nil)
		})
	}
}

func TestStatusErrorKnownCodesKept(t *testing.T) {
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		e := calls.StatusError("/S/M", status.Error(c, "m"), nil)
		require.Equal(t, c, e.Code(), "code %v", c)
		require.Equal(t, "m", e.Message())
	}
}

func TestStatusErrorCapsMessage(t *testing.T) {
	const max = calls.MaxStatusMessageBytes
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
			e := calls.StatusError("/S/M", status.Error(codes.Internal, tt.msg), nil)
			got := e.Message()
			if tt.wantPrefix == "" {
				require.Equal(t, tt.msg, got)
				return
			}
			marker := fmt.Sprintf("…[%d bytes cut]", len(tt.msg)-len(tt.wantPrefix))
			require.Equal(t, tt.wantPrefix+marker, got)
			require.LessOrEqual(t, len(got)-len(marker), max)
			require.True(t, utf8.ValidString(got), "the cut must not split a UTF-8 sequence")
			require.Equal(t, codes.Internal, e.Code())
		})
	}
}

func TestStatusErrorDeadlineExceededMatchesErrTimeout(t *testing.T) {
	e := calls.StatusError("/S/M", status.Error(codes.DeadlineExceeded, "context deadline exceeded"), nil)
	require.Equal(t, calls.ErrTimeout, e.Kind())
	requireMatchesOnly(t, e, calls.ErrTimeout)
	require.Equal(t, codes.DeadlineExceeded, e.Code())
	require.Equal(t, "context deadline exceeded", e.Message(), "the server's message is kept")
}

// Every Unavailable status matches ErrUnavailable, whoever raised it, with its message kept.
func TestStatusErrorUnavailableMatchesErrUnavailable(t *testing.T) {
	tests := []struct {
		name, msg string
	}{
		{"connection refused", `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`},
		{"connection lost", "error reading from server: EOF"},
		{"handshake failed", `connection error: desc = "transport: authentication handshake failed: tls: first record does not look like a TLS handshake"`},
		{"server's own status", "backend draining"},
		{"empty message", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			trailer := metadata.Pairs("k", "v")
			e := calls.StatusError("/S/M", status.Error(codes.Unavailable, tt.msg), trailer)
			require.Equal(t, calls.ErrUnavailable, e.Kind())
			requireMatchesOnly(t, e, calls.ErrUnavailable)
			require.Equal(t, codes.Unavailable, e.Code())
			require.Equal(t, tt.msg, e.Message())
			require.Equal(t, trailer, e.Trailer())
			require.Nil(t, errors.Unwrap(e))
		})
	}
}

// Of the server's statuses, only DeadlineExceeded and Unavailable match a sentinel by code:
// the codes the local sentinels share (InvalidArgument, Canceled, ResourceExhausted) do not.
func TestStatusErrorCodesMatchingSentinels(t *testing.T) {
	want := map[codes.Code]error{
		codes.DeadlineExceeded: calls.ErrTimeout,
		codes.Unavailable:      calls.ErrUnavailable,
	}
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		t.Run(c.String(), func(t *testing.T) {
			e := calls.StatusError("/S/M", status.Error(c, "from the server"), nil)
			require.Equal(t, want[c], e.Kind())
			requireMatchesOnly(t, e, want[c])
		})
	}
}

func TestStatusErrorResourceExhausted(t *testing.T) {
	tests := []struct {
		name string
		msg  string
		want error
	}{
		{"grpc receive limit", "grpc: received message larger than max (2000 vs. 1024)", calls.ErrTooLarge},
		{"grpc receive limit after decompression", "grpc: received message after decompression larger than max (5000 vs. 1024)", calls.ErrTooLarge},
		{"grpc send limit", "grpc: trying to send message larger than max (2000 vs. 1024)", calls.ErrTooLarge},
		{"server quota", "quota exceeded", nil},
		{"server quota naming grpc", "backend says: grpc: received message larger than max (1 vs. 0)", nil},
		{"empty", "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := calls.StatusError("/S/M", status.Error(codes.ResourceExhausted, tt.msg), nil)
			require.Equal(t, codes.ResourceExhausted, e.Code())
			require.Equal(t, tt.msg, e.Message())
			require.Equal(t, tt.want, e.Kind())
			requireMatchesOnly(t, e, tt.want)
		})
	}

	// The same message under another code is not a size limit.
	e := calls.StatusError("/S/M", status.Error(codes.Internal, "grpc: received message larger than max (2000 vs. 1024)"), nil)
	requireMatchesOnly(t, e, nil)
}

func TestStatusErrorFromNonStatusError(t *testing.T) {
	e := calls.StatusError("/S/M", errors.New("transport broke"), nil)
	require.Equal(t, codes.Unknown, e.Code())
	require.Contains(t, e.Message(), "transport broke")
	requireMatchesOnly(t, e, nil)
}

func TestStateString(t *testing.T) {
	tests := []struct {
		s    calls.State
		want string
	}{
		{calls.Pending, "pending"},
		{calls.Succeeded, "succeeded"},
		{calls.Failed, "failed"},
		{calls.State(200), "invalid"},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, tt.s.String())
	}
}
