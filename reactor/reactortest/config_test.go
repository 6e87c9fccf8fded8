package reactortest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// production returns a Config as a game server runs with: every setting of the connection
// set, an idempotent policy, and a DialOptions interceptor that fails the test if it runs.
func production(t *testing.T) reactor.Config {
	return reactor.Config{
		Target:             "dns:///db.internal:50051",
		Credentials:        reactor.MutualTLSFiles("/nonexistent/ca.pem", "/nonexistent/cert.pem", "/nonexistent/key.pem", "db.internal"),
		LoadBalancing:      "round_robin",
		HealthCheck:        true,
		HealthCheckService: "prpctest.TestService",
		Backoff:            reactor.Backoff{BaseDelay: time.Second, MaxDelay: time.Minute},
		Keepalive:          keepalive.ClientParameters{Time: time.Minute},
		DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			t.Errorf("a DialOptions interceptor ran with a Backend")
			return invoker(ctx, method, req, reply, cc, opts...)
		})},
		ServiceConfigLookup: true,
		Policies:            []reactor.MethodPolicy{{Method: echo, Idempotent: true, Timeout: 2 * time.Second}},
		Retry:               reactor.RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Second},
	}
}

// TestNewReactorProductionConfig checks that the Config production runs with works with
// NewReactor as it is: Target or Targets cleared, the transport's settings ignored, the
// idempotent policy honoured.
func TestNewReactorProductionConfig(t *testing.T) {
	tests := []struct {
		name string
		edit func(*reactor.Config)
	}{
		{"Target", func(*reactor.Config) {}},
		{"Targets", func(c *reactor.Config) { c.Target, c.Targets = "", []string{"10.0.0.1:50051", "10.0.0.2:50051"} }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			failures := 3
			reactortest.Handle(b, echo, func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				if failures > 0 { // the attempts of one call run one after another
					failures--
					return nil, status.Error(codes.Unavailable, "warming up")
				}
				return &testpb.EchoResponse{Message: "ok"}, nil
			})
			cfg := production(t)
			tc.edit(&cfg)
			r := reactortest.NewReactor(t, b, cfg)
			p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
			reactortest.Flush(t, r)
			require.NoError(t, p.Err())
			require.Equal(t, 4, b.Calls(echo.Path()), "Retry.MaxAttempts attempts")
		})
	}
}

// TestBackendConfigChecked checks that with a Backend, reactor.New checks the settings it
// ignores as it checks them for a connection it dials, so that a Config a test accepts does
// not fail in production.
func TestBackendConfigChecked(t *testing.T) {
	tests := []struct {
		name string
		edit func(*reactor.Config)
		want string
	}{
		{"Target with Conn", func(c *reactor.Config) { c.Target = "dns:///db.internal:50051" }, "exclusive"}, // NewReactor clears it; New does not
		{"LoadBalancing", func(c *reactor.Config) { c.LoadBalancing = "weighted" }, "Config.LoadBalancing"},
		{"HealthCheck with pick_first", func(c *reactor.Config) { c.LoadBalancing = "pick_first" }, "Config.LoadBalancing"},
		{"HealthCheckService without HealthCheck", func(c *reactor.Config) { c.HealthCheck = false }, "Config.HealthCheckService"},
		{"Keepalive.Time", func(c *reactor.Config) { c.Keepalive.Time = time.Second }, "Config.Keepalive.Time"},
		{"Backoff.Multiplier", func(c *reactor.Config) { c.Backoff.Multiplier = 0.5 }, "Config.Backoff.Multiplier"},
		{"Retry.MaxAttempts", func(c *reactor.Config) { c.Retry.MaxAttempts = 6 }, "Config.Retry.MaxAttempts"},
		{"Retry without an idempotent policy", func(c *reactor.Config) { c.Policies = nil }, "Config.Retry"},
		{"ServiceConfig with idempotent policies", func(c *reactor.Config) {
			c.LoadBalancing, c.HealthCheck, c.HealthCheckService = "", false, ""
			c.ServiceConfig = "{}"
		}, "Config.ServiceConfig"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := production(t)
			cfg.Conn, cfg.Target = reactortest.NewBackend(), ""
			tc.edit(&cfg)
			r, err := reactor.New(cfg)
			require.Nil(t, r)
			require.ErrorContains(t, err, tc.want)
		})
	}
}
