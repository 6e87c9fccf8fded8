package reactor_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestWatchDeliversInOrderThenEnd(t *testing.T) {
	for _, tc := range []struct {
		name     string
		req      *testpb.WatchRequest
		code     codes.Code
		metadata bool
	}{
		{"ok", &testpb.WatchRequest{Count: 50, Message: "m"}, codes.OK, false},
		{"ok with metadata", &testpb.WatchRequest{Count: 5, Message: "m"}, codes.OK, true},
		{"error", &testpb.WatchRequest{Count: 7, Message: "m", FailCode: int32(codes.Aborted), FailMessage: "no"}, codes.Aborted, true},
		{"none then error", &testpb.WatchRequest{FailCode: int32(codes.NotFound)}, codes.NotFound, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newStreamReactor(t, srv.Addr(), reactor.Config{})
			var l streamLog
			s := reactor.Watch(r, watch, tc.req, &calls.StreamOptions{ResponseMetadata: tc.metadata}, l.watchHandler())
			require.Equal(t, "/prpctest.TestService/Watch", s.Method())
			waitFor(t, r, l.ended)
			l.checkEnd(t)
			require.Equal(t, seq("m", 0, int(tc.req.Count)), nonNil(l.msgs))
			require.Equal(t, tc.code, status.Code(l.err))
			if tc.code != codes.OK {
				var ce *calls.Error
				require.ErrorAs(t, l.err, &ce)
				require.False(t, ce.NotSent(), "the server ran the stream")
			}
			if tc.metadata {
				require.Equal(t, []string{testserver.TrailerValue}, s.Trailer().Get(testserver.TrailerKey))
				if tc.req.Count > 0 {
					require.Equal(t, []string{testserver.HeaderValue}, s.Header().Get(testserver.HeaderKey))
				}
			} else {
				require.Nil(t, s.Trailer())
				require.Nil(t, s.Header())
			}
		})
	}
}

// nonNil returns s, or an empty slice for nil, so that require.Equal compares contents.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
