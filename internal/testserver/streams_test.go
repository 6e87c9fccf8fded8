package testserver_test

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
)

// Watch sends the responses its request asks for, numbered from start, then ends with the
// request's code; Chat echoes each request until the client closes its side.
func TestStreams(t *testing.T) {
	s := testserver.Start(t)
	client := dial(t, s)
	for _, tc := range []struct {
		name string
		req  *testpb.WatchRequest
		want []string
		code codes.Code
	}{
		{"ok", &testpb.WatchRequest{Count: 3, Start: 5, Message: "m"}, []string{"m5", "m6", "m7"}, codes.OK},
		{"none", &testpb.WatchRequest{}, nil, codes.OK},
		{"fails after", &testpb.WatchRequest{Count: 1, Message: "x", FailCode: int32(codes.Unavailable)}, []string{"x0"}, codes.Unavailable},
	} {
		t.Run("Watch/"+tc.name, func(t *testing.T) {
			stream, err := client.Watch(ctxWithTimeout(t, 5*time.Second), tc.req)
			require.NoError(t, err)
			var got []string
			for {
				resp, err := stream.Recv()
				if err != nil {
					if tc.code == codes.OK {
						require.ErrorIs(t, err, io.EOF)
					} else {
						require.Equal(t, tc.code, status.Code(err))
					}
					break
				}
				got = append(got, resp.GetMessage())
			}
			require.Equal(t, tc.want, got)
		})
	}

	t.Run("Chat", func(t *testing.T) {
		stream, err := client.Chat(ctxWithTimeout(t, 5*time.Second))
		require.NoError(t, err)
		for _, m := range []string{"a", "b"} {
			require.NoError(t, stream.Send(&testpb.EchoRequest{Message: m}))
			resp, err := stream.Recv()
			require.NoError(t, err)
			require.Equal(t, m, resp.GetMessage())
		}
		require.NoError(t, stream.CloseSend())
		_, err = stream.Recv()
		require.True(t, errors.Is(err, io.EOF), "got %v", err)
	})
	require.EqualValues(t, 4, s.Streams())
	require.EqualValues(t, 6, s.StreamSent())
}
