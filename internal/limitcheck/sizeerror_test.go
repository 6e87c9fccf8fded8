package limitcheck_test

import (
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/limits"
)

// Every size error names the field of Limits that sets the limit it broke, as well as the
// size and the limit, so that the message says what to change.
func TestSizeErrorNamesTheField(t *testing.T) {
	l := limits.Limits{MaxRequestBytes: 100, MaxMetadataBytes: 40}.WithDefaults()
	_, metadataErr := limitcheck.NormalizeMetadata(metadata.MD{"k": {"0123456789"}}, l.MaxMetadataBytes)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"request", limitcheck.CheckRequest(l, 101), "request is 101 bytes, over the 100-byte limit (Limits.MaxRequestBytes)"},
		{"metadata", metadataErr, "metadata is 43 bytes, over the 40-byte limit (Limits.MaxMetadataBytes)"},
		{"response", &limitcheck.SizeError{What: "response", Field: "MaxResponseBytes", Size: 9, Limit: 8},
			"response is 9 bytes, over the 8-byte limit (Limits.MaxResponseBytes)"},
		{"no field", &limitcheck.SizeError{What: "message", Size: 9, Limit: 8}, "message is 9 bytes, over the 8-byte limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.EqualError(t, tt.err, tt.want)
		})
	}
}
