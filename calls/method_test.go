package calls_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
)

func TestNewMethodValidPaths(t *testing.T) {
	tests := []struct {
		path, service, name string
	}{
		{"/S/M", "S", "M"},
		{"/pkg.Service/Method", "pkg.Service", "Method"},
		{"/a.b.C_d/_m1", "a.b.C_d", "_m1"},
		{"/_/_", "_", "_"},
		{"/prpctest.TestService/Echo", "prpctest.TestService", "Echo"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			m, err := calls.NewMethod[*testpb.EchoRequest, *testpb.EchoResponse](tt.path)
			require.NoError(t, err)
			require.Equal(t, tt.path, m.Path())
			require.Equal(t, tt.path, m.String())
			require.Equal(t, tt.service, m.Service())
			require.Equal(t, tt.name, m.Name())
			require.NoError(t, calls.ValidatePath(tt.path))

			var d calls.Descriptor = m
			require.Equal(t, tt.path, d.Path())

			require.NotPanics(t, func() {
				mm := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse](tt.path)
				require.Equal(t, tt.path, mm.Path())
			})
		})
	}
}

func TestNewMethodInvalidPaths(t *testing.T) {
	tests := []struct {
		name, path string
	}{
		{"empty", ""},
		{"slash only", "/"},
		{"no leading slash", "S/M"},
		{"empty method", "/S/"},
		{"empty service", "//M"},
		{"extra segment", "/S/M/x"},
		{"service starts with digit", "/1S/M"},
		{"method starts with digit", "/S/1M"},
		{"dot in method", "/S/M.x"},
		{"space in service", "/S M/M"},
		{"service starts with dot", "/.S/M"},
		{"unicode service", "/Sérvice/M"},
		{"unicode method", "/S/Méthod"},
		{"unicode letter lookalike", "/S/\u212Aelvin"},
		{"no method separator", "/SM"},
		{"trailing space", "/S/M "},
		{"dash in method", "/S/M-x"},
		{"NUL", "/S/M\x00"},
		{"double slash inside", "/S//M"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := calls.NewMethod[*testpb.EchoRequest, *testpb.EchoResponse](tt.path)
			require.Error(t, err)
			require.Nil(t, m)
			require.Contains(t, err.Error(), strconv.Quote(tt.path), "the error quotes the path")
			require.Equal(t, err, calls.ValidatePath(tt.path))

			require.PanicsWithError(t, err.Error(), func() {
				calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse](tt.path)
			})
		})
	}
}

func TestNewMethodRejectsInterfaceResponse(t *testing.T) {
	m, err := calls.NewMethod[*testpb.EchoRequest, proto.Message]("/S/M")
	require.Error(t, err)
	require.Nil(t, m)
	require.Contains(t, err.Error(), "/S/M")
	require.Contains(t, err.Error(), "interface")

	require.Panics(t, func() { calls.MustMethod[*testpb.EchoRequest, proto.Message]("/S/M") })

	// An interface request type is fine: only the response type must be concrete.
	_, err = calls.NewMethod[proto.Message, *testpb.EchoResponse]("/S/M")
	require.NoError(t, err)
}
