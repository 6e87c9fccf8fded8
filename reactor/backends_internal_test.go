package reactor

import (
	"net"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// sliceAddr is a net.Addr whose type is not comparable: == on two of them panics.
type sliceAddr []string

func (a sliceAddr) Network() string { return "test" }
func (a sliceAddr) String() string  { return a[0] }

// TestBackendTableCounts checks the per-backend counts lanes keep through their caches: calls
// and failures by address, a name the balancer picked winning over the address, a lane that
// moves to another backend counting there, and addresses whose type is not comparable counted
// by their string without being cached.
func TestBackendTableCounts(t *testing.T) {
	a := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1}
	b := &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 2}
	odd := sliceAddr{"odd:3"}
	unavailable := status.Error(codes.Unavailable, "down")
	tests := []struct {
		name   string
		addr   net.Addr
		picked string
		err    error
	}{
		{"first call to a", a, "", nil},
		{"a again, from the cache", a, "", nil},
		{"a fails", a, "", unavailable},
		{"b", b, "", nil},
		{"back to a", a, "", unavailable},
		{"a by a picked name", a, "backend-a", nil},
		{"a not comparable", odd, "", nil},
		{"again", odd, "", unavailable},
		{"no connection: not counted", nil, "", unavailable},
	}
	var table backendTable
	var lane1, lane2 backendCache
	for i, tc := range tests {
		cache := &lane1
		if i%2 == 1 {
			cache = &lane2
		}
		require.NotPanics(t, func() { table.record(cache, tc.addr, tc.picked, tc.err) }, tc.name)
	}
	require.Nil(t, lane1.addr, "an address of a type that is not comparable is not cached")
	got := map[string]BackendStats{}
	for _, s := range table.snapshot(nil) {
		got[s.Addr] = s
	}
	require.Len(t, got, 4)
	require.Equal(t, uint64(4), got[a.String()].Calls)
	require.Equal(t, map[codes.Code]uint64{codes.Unavailable: 2}, got[a.String()].Failed)
	require.Equal(t, uint64(1), got[b.String()].Calls)
	require.Empty(t, got[b.String()].Failed)
	require.Equal(t, uint64(1), got["backend-a"].Calls)
	require.Equal(t, uint64(2), got["odd:3"].Calls)
	require.Equal(t, map[codes.Code]uint64{codes.Unavailable: 1}, got["odd:3"].Failed)
}
