package main

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testpb/testpbprpc"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestGeneratedClientAgainstServer calls a real grpc-go server on loopback through the client
// protoc-gen-prpc generated for internal/testpb: the request, its metadata and the response
// cross the network, and a server's error keeps its code.
func TestGeneratedClientAgainstServer(t *testing.T) {
	srv := testserver.Start(t)
	r, err := reactor.New(reactor.Config{
		Target:      srv.Addr(),
		Credentials: reactor.Insecure(),
		Methods:     testpbprpc.TestServiceMethods(),
		Policies:    testpbprpc.TestServicePolicies(),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})

	client := testpbprpc.NewTestServiceClient(r)
	var echoed *testpb.EchoResponse
	var failure error
	// The longest timeout the reactor allows by default (MaxTimeout).
	opts := &calls.Options{Timeout: 5 * time.Second, Metadata: metadata.Pairs("x-player", "steve")}
	client.Echo(&testpb.EchoRequest{Message: "hello"}, opts).
		Then(func(resp *testpb.EchoResponse) { echoed = resp }).
		OnError(func(err error) { t.Errorf("Echo: %v", err) })
	client.Echo(&testpb.EchoRequest{FailCode: int32(codes.NotFound), FailMessage: "no such player"}, opts).
		OnError(func(err error) { failure = err })
	reactortest.Flush(t, r)

	require.Equal(t, "hello", echoed.GetMessage())
	require.Equal(t, "steve", echoed.GetMetadata()["x-player"])
	require.Equal(t, codes.NotFound, status.Code(failure))
	require.Equal(t, int64(2), srv.Calls())
}
