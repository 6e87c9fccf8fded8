package reactor_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/memconn"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// A request with invalid UTF-8 in a string field fails with ErrInvalidArgument and a message
// naming the field's full name, for a flat request type and a nested one alike, and is never
// sent.
func TestEncodingErrorNamesTheField(t *testing.T) {
	b := reactortest.NewBackend()
	r := reactortest.NewReactor(t, b, reactor.Config{})
	structMethod := calls.MustMethod[*structpb.Struct, *testpb.EchoResponse]("/prpctest.Unlisted/Struct")
	mapMethod := calls.MustMethod[*testpb.EchoResponse, *testpb.EchoResponse]("/prpctest.Unlisted/Map")
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"flat", func() error {
			return settle(t, r, reactor.Call(r, echo, &testpb.EchoRequest{Message: "\xff"}, nil))
		}, "encoding the request: string field prpctest.EchoRequest.message contains invalid UTF-8"},
		{"map", func() error {
			return settle(t, r, reactor.Call(r, mapMethod, &testpb.EchoResponse{Metadata: map[string]string{"k\xff": "v"}}, nil))
		}, "encoding the request: string field prpctest.EchoResponse.metadata contains invalid UTF-8 (a map key)"},
		{"nested", func() error {
			req := &structpb.Struct{Fields: map[string]*structpb.Value{"name": structpb.NewStringValue("\xc3\x28")}}
			return settle(t, r, reactor.Call(r, structMethod, req, nil))
		}, "encoding the request: string field google.protobuf.Value.string_value contains invalid UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			t.Log(err)
			require.ErrorIs(t, err, calls.ErrInvalidArgument)
			require.Equal(t, codes.InvalidArgument, status.Code(err))
			require.Contains(t, err.Error(), tt.want)
			require.ErrorIs(t, err, proto.Error, "protobuf's error is the cause")
		})
	}
	require.Zero(t, b.Calls(echo.Path())+b.Calls("/prpctest.Unlisted/Struct")+b.Calls("/prpctest.Unlisted/Map"), "nothing is sent")
}

// A call that fails before gRPC asks for its request (here, a connection that refuses it at
// once, as a fail-fast pick with no ready backend does) fails with its own error, not with
// the encoding error of the call its lane ran before.
func TestEncodingErrorStaysWithItsCall(t *testing.T) {
	conn := refusingConn{}
	r := newReactor(t, nil, reactor.Config{Conn: conn, Workers: 1, BatchSize: 1, Limits: limits.Limits{MaxRequestBytes: 16}})
	tooLarge := settle(t, r, reactor.Call(r, echo, &testpb.EchoRequest{Message: strings.Repeat("x", 32)}, nil))
	require.ErrorIs(t, tooLarge, calls.ErrTooLarge)
	refused := settle(t, r, reactor.Call(r, echo, &testpb.EchoRequest{Message: refuse}, nil))
	require.ErrorIs(t, refused, calls.ErrUnavailable, "got %v", refused)
	require.NotContains(t, refused.Error(), "MaxRequestBytes")
}

// refuse is the message of a request that refusingConn fails before encoding it.
const refuse = "refuse"

// refusingConn fails a call whose request's message is refuse with Unavailable before it
// encodes the request; it encodes any other request, as gRPC does, and answers it.
type refusingConn struct{}

func (refusingConn) Invoke(_ context.Context, _ string, args, reply any, opts ...grpc.CallOption) error {
	if args.(*testpb.EchoRequest).GetMessage() == refuse {
		return status.Error(codes.Unavailable, "no ready backend")
	}
	if _, err := memconn.Encode(args, opts); err != nil {
		return err
	}
	return memconn.Decode(nil, reply, opts)
}

func (refusingConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "no streams")
}

// settle waits for p to settle and returns its error.
func settle[T proto.Message](t *testing.T, r *reactor.Reactor, p *calls.Promise[T]) error {
	t.Helper()
	waitFor(t, r, func() bool { return p.State() != calls.Pending })
	return p.Err()
}
