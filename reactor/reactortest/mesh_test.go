package reactortest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestNewReactorMeshConfig checks a production Config with an xDS target under NewReactor:
// the target's rules apply as in production. Generated-style policies (Idempotent, with a
// timeout) are accepted, and a call of the idempotent method that fails with Unavailable
// runs once, since under xDS the route's retry policy decides and prpc adds no retries; and
// New rejects a setting the control plane owns, naming its counterpart, which it would
// accept with the target cleared.
func TestNewReactorMeshConfig(t *testing.T) {
	mesh := func() reactor.Config {
		return reactor.Config{
			Target:      "xds:///data-service",
			Credentials: reactor.Insecure(),
			Policies:    []reactor.MethodPolicy{{Method: echo, Idempotent: true, Timeout: 2 * time.Second}},
		}
	}
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return nil, status.Error(codes.Unavailable, "down")
	})
	r := reactortest.NewReactor(t, b, mesh())
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	reactortest.Flush(t, r)
	require.ErrorIs(t, p.Err(), calls.ErrUnavailable)
	require.Equal(t, 1, b.Calls(echo.Path()), "attempts of an idempotent method under xDS")

	cfg := mesh()
	cfg.LoadBalancing = "round_robin"
	cfg.Conn = reactortest.NewBackend()
	_, err := reactor.New(cfg)
	require.ErrorContains(t, err, "Config.LoadBalancing (under xDS: the cluster's lb_policy)")
	cfg.Target = "dns:///data-service"
	_, err = reactor.New(cfg)
	require.ErrorContains(t, err, "exclusive", "a Target other than xDS with a Backend")
}
