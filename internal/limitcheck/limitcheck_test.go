package limitcheck_test

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/limits"
)

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
			err := limitcheck.CheckRequest(l, tt.n)
			if tt.ok {
				require.NoError(t, err)
				return
			}
			var se *limitcheck.SizeError
			require.True(t, errors.As(err, &se), "want *SizeError, got %T", err)
			require.Equal(t, limitcheck.SizeError{What: "request", Field: "MaxRequestBytes", Size: tt.n, Limit: 100}, *se)
			require.Equal(t, fmt.Sprintf("request is %d bytes, over the 100-byte limit (Limits.MaxRequestBytes)", tt.n), err.Error())
		})
	}
}

func TestCallOptionsCapLimits(t *testing.T) {
	l := limits.Limits{MaxRequestBytes: 123, MaxResponseBytes: 456}.WithDefaults()
	var send, recv int
	for _, o := range limitcheck.CallOptions(l) {
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
}

// TestDialOptionsAdvertiseReceivedHeaderLimit reads the HTTP/2 SETTINGS frame a client dialled
// with DialOptions sends: it advertises MaxReceivedHeaderBytes, its default when unset, as
// SETTINGS_MAX_HEADER_LIST_SIZE, so that gRPC's own default never applies.
func TestDialOptionsAdvertiseReceivedHeaderLimit(t *testing.T) {
	tests := []struct {
		name string
		l    limits.Limits
		want uint32
	}{
		{"default", limits.Limits{}, limits.DefaultMaxReceivedHeaderBytes},
		{"defaults applied", limits.Limits{}.WithDefaults(), limits.DefaultMaxReceivedHeaderBytes},
		{"set", limits.Limits{MaxReceivedHeaderBytes: 123456}, 123456},
		{"max", limits.Limits{MaxReceivedHeaderBytes: limits.MaxReceivedHeaderLimit}, limits.MaxReceivedHeaderLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Len(t, limitcheck.DialOptions(tt.l), 1)
			got, ok := advertisedHeaderListSize(t, limitcheck.DialOptions(tt.l))
			require.True(t, ok, "no SETTINGS_MAX_HEADER_LIST_SIZE in the client's SETTINGS")
			require.Equal(t, tt.want, got)
		})
	}
}

// advertisedHeaderListSize dials a loopback listener with opts, reads the client's connection
// preface and first SETTINGS frame, and returns its SETTINGS_MAX_HEADER_LIST_SIZE, if any.
func advertisedHeaderListSize(t *testing.T, opts []grpc.DialOption) (uint32, bool) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer lis.Close()
	cc, err := grpc.NewClient("passthrough:///"+lis.Addr().String(),
		append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, opts...)...)
	require.NoError(t, err)
	defer cc.Close()
	cc.Connect()
	conn, err := lis.Accept()
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))

	const (
		frameSettings            = 0x4
		settingMaxHeaderListSize = 0x6
	)
	preface := make([]byte, len("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"))
	_, err = io.ReadFull(conn, preface)
	require.NoError(t, err)
	require.Equal(t, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", string(preface))
	head := make([]byte, 9) // length (24 bits), type, flags, stream id
	_, err = io.ReadFull(conn, head)
	require.NoError(t, err)
	require.Equal(t, byte(frameSettings), head[3], "the client's first frame is SETTINGS")
	payload := make([]byte, int(head[0])<<16|int(head[1])<<8|int(head[2]))
	_, err = io.ReadFull(conn, payload)
	require.NoError(t, err)
	for p := payload; len(p) >= 6; p = p[6:] {
		if binary.BigEndian.Uint16(p) == settingMaxHeaderListSize {
			return binary.BigEndian.Uint32(p[2:]), true
		}
	}
	return 0, false
}
