package reactortest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestNewReactorChecksRequestOwnership checks that NewReactor turns on
// Config.CheckRequestOwnership without being asked: game code that reuses one request for the
// next call while the last one still owns it fails, with errors naming the contract, and
// neither call reaches the backend. The reactor's one lane is held by another call meanwhile,
// so the request is modified before any lane reads it.
func TestNewReactorChecksRequestOwnership(t *testing.T) {
	b := reactortest.NewBackend()
	entered, release := make(chan struct{}), make(chan struct{})
	var received []string // written by the handler, read after Flush
	reactortest.Handle(b, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if req.GetMessage() == "hold" {
			close(entered)
			select {
			case <-release:
			case <-ctx.Done():
			}
		}
		received = append(received, req.GetMessage())
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Workers: 1, BatchSize: 1, DefaultTimeout: 5 * time.Second})
	reactor.Call(r, echo, &testpb.EchoRequest{Message: "hold"}, nil)
	select {
	case <-entered:
	case <-time.After(reactortest.FlushTimeout):
		t.Fatal("the hold call did not reach the backend")
	}

	req := &testpb.EchoRequest{Message: "purchase 1"}
	first := reactor.Call(r, echo, req, nil)
	req.Message = "purchase 2" // while the first call owns it
	second := reactor.Call(r, echo, req, nil)
	require.ErrorIs(t, second.Err(), calls.ErrInvalidArgument, "rejected at once")
	require.ErrorContains(t, second.Err(), "request modified while an earlier call that has not settled owns it; never sent. "+
		"Call and Go own their request until the call settles: build a fresh request per call (found by Config.CheckRequestOwnership)")

	close(release)
	reactortest.Flush(t, r)
	require.ErrorIs(t, first.Err(), calls.ErrInvalidArgument)
	require.ErrorContains(t, first.Err(), "request modified after it was submitted, before its call was sent; never sent. "+
		"Call and Go own their request until the call settles")
	require.Equal(t, []string{"hold"}, received, "neither purchase reached the backend")
}
