package dial

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// TestWithPlaintextHint: the hint is added to exactly the Unavailable statuses that say the
// server's HTTP/2 preface never came, gRPC's two wordings of it, and to nothing else.
func TestWithPlaintextHint(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		wantHint bool
	}{
		{"preface EOF", status.Error(codes.Unavailable, `connection error: desc = "error reading server preface: EOF"`), true},
		{"preface reset", status.Error(codes.Unavailable, `connection error: desc = "error reading server preface: read tcp 127.0.0.1:1->127.0.0.1:2: read: connection reset by peer"`), true},
		{"preface frame too large (a TLS alert)", status.Error(codes.Unavailable, `connection error: desc = "error reading server preface: http2: frame too large"`), true},
		{"first frame not settings", status.Error(codes.Unavailable, `connection error: desc = "initial http2 frame from server is not a settings frame: *http2.DataFrame"`), true},
		{"refused", status.Error(codes.Unavailable, `connection error: desc = "transport: Error while dialing: dial tcp 127.0.0.1:1: connect: connection refused"`), false},
		{"server's own Unavailable", status.Error(codes.Unavailable, "backend draining"), false},
		{"preface text, other code", status.Error(codes.Internal, "error reading server preface: EOF"), false},
		{"not a status", errors.New("error reading server preface: EOF"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := WithPlaintextHint(tt.err)
			if !tt.wantHint {
				require.Same(t, tt.err, got)
				return
			}
			st := status.Convert(got)
			require.Equal(t, codes.Unavailable, st.Code())
			require.Equal(t, status.Convert(tt.err).Message()+plaintextHint, st.Message())
		})
	}
}
