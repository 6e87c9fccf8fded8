package limits_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/trixnew/prpc/limits"
)

func TestDefaults(t *testing.T) {
	require.Equal(t, 4<<20, limits.DefaultMaxRequestBytes)
	require.Equal(t, 4<<20, limits.DefaultMaxResponseBytes)
	require.Equal(t, 32<<10, limits.DefaultMaxMetadataBytes)

	tests := []struct {
		name string
		in   limits.Limits
		want limits.Limits
	}{
		{"all zero", limits.Limits{}, limits.Limits{
			MaxRequestBytes:  limits.DefaultMaxRequestBytes,
			MaxResponseBytes: limits.DefaultMaxResponseBytes,
			MaxMetadataBytes: limits.DefaultMaxMetadataBytes,
		}},
		{"all set", limits.Limits{MaxRequestBytes: 1, MaxResponseBytes: 2, MaxMetadataBytes: 3},
			limits.Limits{MaxRequestBytes: 1, MaxResponseBytes: 2, MaxMetadataBytes: 3}},
		{"request set", limits.Limits{MaxRequestBytes: 10}, limits.Limits{
			MaxRequestBytes:  10,
			MaxResponseBytes: limits.DefaultMaxResponseBytes,
			MaxMetadataBytes: limits.DefaultMaxMetadataBytes,
		}},
		{"response set", limits.Limits{MaxResponseBytes: 10}, limits.Limits{
			MaxRequestBytes:  limits.DefaultMaxRequestBytes,
			MaxResponseBytes: 10,
			MaxMetadataBytes: limits.DefaultMaxMetadataBytes,
		}},
		{"metadata set", limits.Limits{MaxMetadataBytes: 10}, limits.Limits{
			MaxRequestBytes:  limits.DefaultMaxRequestBytes,
			MaxResponseBytes: limits.DefaultMaxResponseBytes,
			MaxMetadataBytes: 10,
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
		{"at max", limits.Limits{MaxRequestBytes: limits.MaxMessageLimit, MaxResponseBytes: limits.MaxMessageLimit, MaxMetadataBytes: limits.MaxMetadataLimit}, "", 0},
		{"request negative", limits.Limits{MaxRequestBytes: -1}, "MaxRequestBytes", limits.MaxMessageLimit},
		{"request over max", limits.Limits{MaxRequestBytes: limits.MaxMessageLimit + 1}, "MaxRequestBytes", limits.MaxMessageLimit},
		{"response negative", limits.Limits{MaxResponseBytes: -1}, "MaxResponseBytes", limits.MaxMessageLimit},
		{"response over max", limits.Limits{MaxResponseBytes: limits.MaxMessageLimit + 1}, "MaxResponseBytes", limits.MaxMessageLimit},
		{"metadata negative", limits.Limits{MaxMetadataBytes: -5}, "MaxMetadataBytes", limits.MaxMetadataLimit},
		{"metadata over max", limits.Limits{MaxMetadataBytes: limits.MaxMetadataLimit + 1}, "MaxMetadataBytes", limits.MaxMetadataLimit},
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

func TestCheckRequest(t *testing.T) {
	l := limits.Limits{MaxRequestBytes: 100}.WithDefaults()
	tests := []struct {
		n  int
		ok bool
	}{
		{0, true},
		{99, true},
		{100, true},
		{101, false},
		{1 << 30, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.n), func(t *testing.T) {
			err := l.CheckRequest(tt.n)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			var se *limits.SizeError
			require.True(t, errors.As(err, &se), "want *SizeError, got %T", err)
			require.Equal(t, limits.SizeError{What: "request", Size: tt.n, Limit: 100}, *se)
			require.Equal(t, fmt.Sprintf("request is %d bytes, over the 100-byte limit", tt.n), err.Error())
		})
	}
}

func TestCallOptionsCapLimits(t *testing.T) {
	l := limits.Limits{MaxRequestBytes: 123, MaxResponseBytes: 456}.WithDefaults()
	var send, recv int
	for _, o := range l.CallOptions() {
		switch o := o.(type) {
		case grpc.MaxSendMsgSizeCallOption:
			send = o.MaxSendMsgSize
		case grpc.MaxRecvMsgSizeCallOption:
			recv = o.MaxRecvMsgSize
		default:
			t.Fatalf("unexpected call option %T", o)
		}
	}
	require.Equal(t, 123, send)
	require.Equal(t, 456, recv)
	require.Len(t, l.DialOptions(), 1)
}
