package main

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// refusingSaves refuses player 0's SavePlayer and holds every other one until its caller
// gives up.
type refusingSaves struct {
	networkpb.UnimplementedDataServiceServer
}

func (refusingSaves) SavePlayer(ctx context.Context, req *networkpb.SavePlayerRequest) (*networkpb.SavePlayerResponse, error) {
	if req.GetPlayer().GetXuid() == xuidOf(0) {
		return nil, status.Error(codes.FailedPrecondition, "player 0 is refused")
	}
	<-ctx.Done()
	return nil, status.FromContextError(ctx.Err()).Err()
}

// TestSeedStopsAtFirstFailure checks that a failed save cancels the saves in flight, so that
// seed returns its error at once instead of when its own one-minute timeout expires.
func TestSeedStopsAtFirstFailure(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	networkpb.RegisterDataServiceServer(gs, refusingSaves{})
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	defer func() {
		gs.Stop()
		<-served
	}()

	errc := make(chan error, 1)
	go func() { errc <- seed(context.Background(), lis.Addr().String(), 100) }()
	select {
	case err := <-errc:
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "saving player 0:") {
			t.Errorf("seed returned %v; want player 0's FailedPrecondition", err)
		}
	case <-time.After(10 * time.Second): // a sixth of seed's own timeout
		t.Fatal("seed did not return when a save failed")
	}
}
