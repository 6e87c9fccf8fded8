package main

// The fast backend: a GetPlayer handler that does no work, so that the burst suites run
// against it measure the clients with as little of the backend in the way as gRPC allows.

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// Where each burst suite's calls go: the data-service example, or the fast backend.
const (
	backendData = "data-service"
	backendFast = "fast"
)

// backendText describes the backend kind for the reports.
func backendText(kind string) string {
	if kind == backendFast {
		return "fast backend: a handler that does no work"
	}
	return "data service (in-memory store)"
}

// fastService is DataService with a GetPlayer that answers from a table built before
// serving: a map lookup, nothing else. Its other methods are unimplemented.
type fastService struct {
	networkpb.UnimplementedDataServiceServer
	answers map[string]*networkpb.GetPlayerResponse
}

// notFound is the fast backend's answer for a player it does not hold.
var notFound = &networkpb.GetPlayerResponse{}

// newFastService returns a fastService holding players 0…n−1, each as playerOf(i) at version
// 1, as the data service answers a player saved once.
func newFastService(n int) *fastService {
	s := &fastService{answers: make(map[string]*networkpb.GetPlayerResponse, n)}
	for i := range n {
		p := playerOf(i)
		p.Version = 1
		s.answers[p.Xuid] = &networkpb.GetPlayerResponse{Found: true, Player: p}
	}
	return s
}

// GetPlayer answers from the table. The answers are shared between calls and only read:
// gRPC marshals them, and nothing writes them once serving starts.
func (s *fastService) GetPlayer(_ context.Context, req *networkpb.GetPlayerRequest) (*networkpb.GetPlayerResponse, error) {
	if resp, ok := s.answers[req.GetXuid()]; ok {
		return resp, nil
	}
	return notFound, nil
}

// fastBackend is a running fast backend: a grpc-go server of fastService on loopback.
type fastBackend struct {
	gs     *grpc.Server
	addr   string
	served chan struct{} // closed when Serve returns
}

// startFastBackend builds the table of players 0…n−1, then serves it on an ephemeral
// loopback port, with the data service's keepalive policy and no interceptor.
func startFastBackend(ctx context.Context, n int) (*fastBackend, error) {
	svc := newFastService(n)
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fast backend: listen: %w", err)
	}
	gs := grpc.NewServer(grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
		MinTime:             5 * time.Second,
		PermitWithoutStream: true,
	}))
	networkpb.RegisterDataServiceServer(gs, svc)
	f := &fastBackend{gs: gs, addr: lis.Addr().String(), served: make(chan struct{})}
	go func() {
		defer close(f.served)
		_ = gs.Serve(lis)
	}()
	return f, nil
}

// stop stops the server, closing its connections, and waits for Serve to return.
func (f *fastBackend) stop() {
	f.gs.Stop()
	<-f.served
}
