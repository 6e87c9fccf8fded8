package reactor_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// maxStatusMessage is the length at which calls.Error documents that a status message is cut.
const maxStatusMessage = 4096

func TestServerStatus(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	long := strings.Repeat("m", 10<<10)
	tests := []struct {
		name     string
		code     int32
		msg      string
		wantCode codes.Code
		wantMsg  string
		wantKind error
	}{
		{"code 99", 99, "odd", codes.Unknown, "server sent unknown status code 99: odd", nil},
		{"code 17", 17, "odd", codes.Unknown, "server sent unknown status code 17: odd", nil},
		{"10 KiB message", int32(codes.Internal), long, codes.Internal,
			long[:maxStatusMessage] + fmt.Sprintf("…[%d bytes cut]", len(long)-maxStatusMessage), nil},
		{"message at the cap", int32(codes.Internal), long[:maxStatusMessage], codes.Internal, long[:maxStatusMessage], nil},
		{"server DeadlineExceeded", int32(codes.DeadlineExceeded), "slow db", codes.DeadlineExceeded, "slow db", calls.ErrTimeout},
		{"server Unavailable", int32(codes.Unavailable), "draining", codes.Unavailable, "draining", calls.ErrUnavailable},
		{"server ResourceExhausted", int32(codes.ResourceExhausted), "quota", codes.ResourceExhausted, "quota", nil},
		{"server InvalidArgument", int32(codes.InvalidArgument), "bad xuid", codes.InvalidArgument, "bad xuid", nil},
		{"server Canceled", int32(codes.Canceled), "gone", codes.Canceled, "gone", nil},
		{"server PermissionDenied", int32(codes.PermissionDenied), "no", codes.PermissionDenied, "no", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := roundTrip(t, r, &testpb.EchoRequest{FailCode: tt.code, FailMessage: tt.msg}, nil)
			var ce *calls.Error
			require.True(t, errors.As(err, &ce), "got %T %v", err, err)
			require.Equal(t, tt.wantCode, ce.Code())
			require.Equal(t, tt.wantCode, status.Code(err))
			require.Equal(t, tt.wantMsg, ce.Message())
			require.Equal(t, tt.wantKind, ce.Kind())
			for _, s := range []error{calls.ErrTimeout, calls.ErrUnavailable, calls.ErrTooLarge, calls.ErrInvalidArgument,
				calls.ErrCancelled, calls.ErrClosed, calls.ErrOverloaded} {
				require.Equal(t, s == tt.wantKind, errors.Is(err, s), "errors.Is(err, %v)", s)
			}
			require.Equal(t, echo.Path(), ce.Method())
		})
	}
}
