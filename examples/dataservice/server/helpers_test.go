package server

import (
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// startServer starts a server with opts and stops it when the test ends.
func startServer(t *testing.T, opts Options) *Server {
	t.Helper()
	srv, err := Start(t.Context(), opts)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	return srv
}

// dial connects to addr with creds and closes the connection when the test
// ends. Nil creds mean plaintext.
func dial(t *testing.T, addr string, creds credentials.TransportCredentials) *grpc.ClientConn {
	t.Helper()
	if creds == nil {
		creds = insecure.NewCredentials()
	}
	conn, err := grpc.NewClient("passthrough:///"+addr, grpc.WithTransportCredentials(creds))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, conn.Close()) })
	return conn
}

// startWithClient starts a plaintext in-memory server and returns it with a
// DataService client connected to it.
func startWithClient(t *testing.T) (*Server, networkpb.DataServiceClient, *grpc.ClientConn) {
	t.Helper()
	srv := startServer(t, Options{})
	conn := dial(t, srv.Addr(), nil)
	return srv, networkpb.NewDataServiceClient(conn), conn
}

// requireProtoEqual fails the test unless want and got are equal messages.
func requireProtoEqual(t *testing.T, want, got proto.Message) {
	t.Helper()
	require.Truef(t, proto.Equal(want, got), "want %v\ngot  %v", want, got)
}
