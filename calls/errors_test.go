package calls_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callerr"
)

// callError is what package reactor does with the errors it builds: it hands them out as
// *calls.Error.
func callError(e *callerr.Error) *calls.Error { return (*calls.Error)(e) }

var sentinels = []struct {
	name string
	err  error
	kind callerr.Kind
	code codes.Code
}{
	{"ErrClosed", calls.ErrClosed, callerr.Closed, codes.Canceled},
	{"ErrOverloaded", calls.ErrOverloaded, callerr.Overloaded, codes.ResourceExhausted},
	{"ErrTimeout", calls.ErrTimeout, callerr.Timeout, codes.DeadlineExceeded},
	{"ErrCancelled", calls.ErrCancelled, callerr.Cancelled, codes.Canceled},
	{"ErrTooLarge", calls.ErrTooLarge, callerr.TooLarge, codes.ResourceExhausted},
	{"ErrInvalidArgument", calls.ErrInvalidArgument, callerr.InvalidArgument, codes.InvalidArgument},
	{"ErrUnavailable", calls.ErrUnavailable, callerr.Unavailable, codes.Unavailable},
	{"ErrShed", calls.ErrShed, callerr.Shed, codes.ResourceExhausted},
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

// A failure prpc raised itself matches the sentinel of its kind, and no other, with the
// sentinel's code, directly and wrapped.
func TestLocalErrorMatchesItsSentinelOnly(t *testing.T) {
	require.Len(t, sentinels, callerr.NumKinds-1, "every kind but None has a sentinel")
	for _, s := range sentinels {
		t.Run(s.name, func(t *testing.T) {
			e := callError(callerr.New(s.kind, "/S/M", "why it failed", nil))
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

func TestErrorUnwrapReturnsCause(t *testing.T) {
	cause := context.DeadlineExceeded
	e := callError(callerr.New(callerr.Closed, "/S/M", "cut off", cause))
	require.Equal(t, cause, errors.Unwrap(e))
	require.ErrorIs(t, e, context.DeadlineExceeded)
	require.ErrorIs(t, e, calls.ErrClosed)
	// The cause does not change the code or the sentinel.
	require.Equal(t, codes.Canceled, e.Code())
	requireMatchesOnly(t, e, calls.ErrClosed)

	other := errors.New("custom cause")
	e = callError(callerr.New(callerr.Cancelled, "/S/M", "parent done", other))
	require.Same(t, other, errors.Unwrap(e))
	require.ErrorIs(t, e, other)
}

func TestServerStatusErrorKeepsStatus(t *testing.T) {
	detail := durationpb.New(3 * time.Second)
	st, err := status.New(codes.NotFound, "player 42 not found").WithDetails(detail)
	require.NoError(t, err)
	trailer := metadata.Pairs("x-trailer", "done", "x-other", "1")

	e := callError(callerr.FromStatus("/pkg.S/Get", st.Err(), trailer))
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

// Of the server's statuses, only DeadlineExceeded and Unavailable match a sentinel by code:
// the codes the local sentinels share (InvalidArgument, Canceled, ResourceExhausted) do not.
func TestServerStatusErrorsMatchingSentinels(t *testing.T) {
	want := map[codes.Code]error{
		codes.DeadlineExceeded: calls.ErrTimeout,
		codes.Unavailable:      calls.ErrUnavailable,
	}
	for c := codes.OK + 1; c <= codes.Unauthenticated; c++ {
		t.Run(c.String(), func(t *testing.T) {
			e := callError(callerr.FromStatus("/S/M", status.Error(c, "from the server"), nil))
			require.Equal(t, want[c], e.Kind())
			requireMatchesOnly(t, e, want[c])
		})
	}
}

// gRPC's own size limits match ErrTooLarge; a server's ResourceExhausted matches nothing.
func TestResourceExhaustedMatchesErrTooLargeOnlyFromGRPC(t *testing.T) {
	e := callError(callerr.FromStatus("/S/M", status.Error(codes.ResourceExhausted, "grpc: received message larger than max (2000 vs. 1024)"), nil))
	require.Equal(t, calls.ErrTooLarge, e.Kind())
	requireMatchesOnly(t, e, calls.ErrTooLarge)
	require.Equal(t, codes.ResourceExhausted, e.Code())

	e = callError(callerr.FromStatus("/S/M", status.Error(codes.ResourceExhausted, "quota exceeded"), nil))
	require.Nil(t, e.Kind())
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
