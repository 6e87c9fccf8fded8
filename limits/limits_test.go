package limits_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/limits"
)

// headerListSlack is the least MaxReceivedHeaderBytes must exceed MaxMetadataBytes by, as
// Limits.MaxReceivedHeaderBytes documents it.
const headerListSlack = 8 << 10

func TestDefaults(t *testing.T) {
	require.Equal(t, 4<<20, limits.DefaultMaxRequestBytes)
	require.Equal(t, 4<<20, limits.DefaultMaxResponseBytes)
	require.Equal(t, 32<<10, limits.DefaultMaxMetadataBytes)
	require.Equal(t, 1<<20, limits.DefaultMaxReceivedHeaderBytes)

	tests := []struct {
		name string
		in   limits.Limits
		want limits.Limits
	}{
		{"all zero", limits.Limits{}, limits.Limits{
			MaxRequestBytes:        limits.DefaultMaxRequestBytes,
			MaxResponseBytes:       limits.DefaultMaxResponseBytes,
			MaxMetadataBytes:       limits.DefaultMaxMetadataBytes,
			MaxReceivedHeaderBytes: limits.DefaultMaxReceivedHeaderBytes,
		}},
		{"all set", limits.Limits{MaxRequestBytes: 1, MaxResponseBytes: 2, MaxMetadataBytes: 3, MaxReceivedHeaderBytes: 9000},
			limits.Limits{MaxRequestBytes: 1, MaxResponseBytes: 2, MaxMetadataBytes: 3, MaxReceivedHeaderBytes: 9000}},
		{"request set", limits.Limits{MaxRequestBytes: 10}, limits.Limits{
			MaxRequestBytes:        10,
			MaxResponseBytes:       limits.DefaultMaxResponseBytes,
			MaxMetadataBytes:       limits.DefaultMaxMetadataBytes,
			MaxReceivedHeaderBytes: limits.DefaultMaxReceivedHeaderBytes,
		}},
		{"response set", limits.Limits{MaxResponseBytes: 10}, limits.Limits{
			MaxRequestBytes:        limits.DefaultMaxRequestBytes,
			MaxResponseBytes:       10,
			MaxMetadataBytes:       limits.DefaultMaxMetadataBytes,
			MaxReceivedHeaderBytes: limits.DefaultMaxReceivedHeaderBytes,
		}},
		{"metadata set", limits.Limits{MaxMetadataBytes: 10}, limits.Limits{
			MaxRequestBytes:        limits.DefaultMaxRequestBytes,
			MaxResponseBytes:       limits.DefaultMaxResponseBytes,
			MaxMetadataBytes:       10,
			MaxReceivedHeaderBytes: limits.DefaultMaxReceivedHeaderBytes,
		}},
		{"received headers set", limits.Limits{MaxReceivedHeaderBytes: 2 << 20}, limits.Limits{
			MaxRequestBytes:        limits.DefaultMaxRequestBytes,
			MaxResponseBytes:       limits.DefaultMaxResponseBytes,
			MaxMetadataBytes:       limits.DefaultMaxMetadataBytes,
			MaxReceivedHeaderBytes: 2 << 20,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.in.WithDefaults()
			require.Equal(t, tt.want, got)
			require.NoError(t, got.Validate())
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name      string
		l         limits.Limits
		wantField string // empty: valid
		wantBound int
	}{
		{"zero", limits.Limits{}, "", 0},
		{"ones", limits.Limits{MaxRequestBytes: 1, MaxResponseBytes: 1, MaxMetadataBytes: 1}, "", 0},
		{"at max", limits.Limits{MaxRequestBytes: limits.MaxMessageLimit, MaxResponseBytes: limits.MaxMessageLimit, MaxMetadataBytes: limits.MaxMetadataLimit, MaxReceivedHeaderBytes: limits.MaxReceivedHeaderLimit}, "", 0},
		{"request negative", limits.Limits{MaxRequestBytes: -1}, "MaxRequestBytes", limits.MaxMessageLimit},
		{"request over max", limits.Limits{MaxRequestBytes: limits.MaxMessageLimit + 1}, "MaxRequestBytes", limits.MaxMessageLimit},
		{"response negative", limits.Limits{MaxResponseBytes: -1}, "MaxResponseBytes", limits.MaxMessageLimit},
		{"response over max", limits.Limits{MaxResponseBytes: limits.MaxMessageLimit + 1}, "MaxResponseBytes", limits.MaxMessageLimit},
		{"metadata negative", limits.Limits{MaxMetadataBytes: -5}, "MaxMetadataBytes", limits.MaxMetadataLimit},
		{"metadata over max", limits.Limits{MaxMetadataBytes: limits.MaxMetadataLimit + 1}, "MaxMetadataBytes", limits.MaxMetadataLimit},
		{"received headers negative", limits.Limits{MaxReceivedHeaderBytes: -1}, "MaxReceivedHeaderBytes", limits.MaxReceivedHeaderLimit},
		{"received headers over max", limits.Limits{MaxReceivedHeaderBytes: limits.MaxReceivedHeaderLimit + 1}, "MaxReceivedHeaderBytes", limits.MaxReceivedHeaderLimit},
		// The lower bound is MaxMetadataBytes (its default if unset) + HeaderListSlack.
		{"received headers at the lower bound", limits.Limits{MaxMetadataBytes: 1000, MaxReceivedHeaderBytes: 1000 + headerListSlack}, "", 0},
		{"received headers below MaxMetadataBytes + slack", limits.Limits{MaxMetadataBytes: 1000, MaxReceivedHeaderBytes: 1000 + headerListSlack - 1}, "MaxReceivedHeaderBytes", 1000 + headerListSlack},
		{"received headers below the default metadata + slack", limits.Limits{MaxReceivedHeaderBytes: limits.DefaultMaxMetadataBytes + headerListSlack - 1}, "MaxReceivedHeaderBytes", limits.DefaultMaxMetadataBytes + headerListSlack},
		{"received headers one", limits.Limits{MaxReceivedHeaderBytes: 1}, "MaxReceivedHeaderBytes", limits.DefaultMaxMetadataBytes + headerListSlack},
		{"received headers unset, default below the bound", limits.Limits{MaxMetadataBytes: limits.MaxMetadataLimit}, "MaxReceivedHeaderBytes", limits.MaxMetadataLimit + headerListSlack},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if tt.wantField == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.Contains(t, err.Error(), "Limits."+tt.wantField)
			require.Contains(t, err.Error(), fmt.Sprint(tt.wantBound), "the error names the bound")
		})
	}
}
