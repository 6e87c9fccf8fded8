package callerr_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callerr"
)

// A response over the client's own receive limit names Limits.MaxResponseBytes, with gRPC's
// message kept at the end and gRPC's error as the cause; a server's refusal of the request, and
// every other status, is FromStatus's error unchanged.
func TestFromCallStatusNamesTheResponseLimit(t *testing.T) {
	const limit, request = 64, 10
	const either = ": the response, over Limits.MaxResponseBytes, or the request, over the server's own receive limit: "
	tests := []struct {
		name    string
		code    codes.Code
		msg     string
		request int
		want    string // the message; "" for FromStatus's
	}{
		{"response over the limit", codes.ResourceExhausted, "grpc: received message larger than max (214 vs. 64)", request,
			"response is 214 bytes, over the 64-byte limit (Limits.MaxResponseBytes): grpc: received message larger than max (214 vs. 64)"},
		{"response over the limit, a request over it too", codes.ResourceExhausted, "grpc: received message larger than max (214 vs. 64)", 100,
			"response is 214 bytes, over the 64-byte limit (Limits.MaxResponseBytes): grpc: received message larger than max (214 vs. 64)"},
		{"response over the limit after decompression", codes.ResourceExhausted, "grpc: received message after decompression larger than max 64", request,
			"response is over the 64-byte limit after decompression (Limits.MaxResponseBytes): grpc: received message after decompression larger than max 64"},
		{"response over the limit after legacy decompression", codes.ResourceExhausted, "grpc: message after decompression larger than max (300 vs. 64)", request,
			"response is 300 bytes after decompression, over the 64-byte limit (Limits.MaxResponseBytes): grpc: message after decompression larger than max (300 vs. 64)"},
		{"the request's size: either", codes.ResourceExhausted, "grpc: received message larger than max (214 vs. 64)", 214,
			"a message of 214 bytes is over a 64-byte limit" + either + "grpc: received message larger than max (214 vs. 64)"},
		{"no size, a request over the bound: either", codes.ResourceExhausted, "grpc: received message after decompression larger than max 64", 100,
			"a message is over a 64-byte limit after decompression" + either + "grpc: received message after decompression larger than max 64"},
		{"another bound: the server's limit", codes.ResourceExhausted, "grpc: received message larger than max (2000 vs. 1024)", 2000, ""},
		{"the machine's limit", codes.ResourceExhausted, "grpc: received message larger than max length allowed on current machine (5000000000 vs. 64)", request, ""},
		{"the send limit", codes.ResourceExhausted, "trying to send message larger than max (214 vs. 64)", request, ""},
		{"a server's own ResourceExhausted", codes.ResourceExhausted, "quota exceeded", request, ""},
		{"the same text under another code", codes.Internal, "grpc: received message larger than max (214 vs. 64)", request, ""},
		{"a malformed size", codes.ResourceExhausted, "grpc: received message larger than max (many vs. 64)", request, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := status.Error(tt.code, tt.msg)
			trailer := metadata.Pairs("k", "v")
			e := callerr.FromCallStatus("/S/M", err, trailer, limit, tt.request)
			plain := callerr.FromStatus("/S/M", err, trailer)
			require.Equal(t, plain.Kind(), e.Kind())
			require.Equal(t, tt.code, e.Status().Code())
			require.Equal(t, trailer, e.Trailer())
			if tt.want == "" {
				require.Equal(t, plain.Status().Message(), e.Status().Message())
				require.NoError(t, e.Cause())
				return
			}
			require.Equal(t, callerr.TooLarge, e.Kind())
			require.Equal(t, tt.want, e.Status().Message())
			require.True(t, errors.Is(e.Cause(), err), "the cause is gRPC's error")
		})
	}
}
