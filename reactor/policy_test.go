package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

func TestServiceConfigGenerated(t *testing.T) {
	base := reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure()}
	tests := []struct {
		name string
		edit func(*reactor.Config)
		want string // JSON, compared semantically
	}{
		{"gRPC's default balancer, observed", func(*reactor.Config) {}, `{"loadBalancingConfig":[{"prpc_observed_pick_first":{"table":0}}]}`},
		{"round robin", func(c *reactor.Config) { c.LoadBalancing = "round_robin" },
			`{"loadBalancingConfig":[{"prpc_observed_round_robin":{"table":0}}]}`},
		{"static targets imply round robin", func(c *reactor.Config) { c.Target = ""; c.Targets = []string{"127.0.0.1:1", "127.0.0.2:1"} },
			`{"loadBalancingConfig":[{"prpc_observed_round_robin":{"table":0}}]}`},
		{"health checking", func(c *reactor.Config) { c.HealthCheck = true; c.HealthCheckService = "network.DataService" },
			`{"loadBalancingConfig":[{"prpc_observed_round_robin":{"table":0}}],"healthCheckConfig":{"serviceName":"network.DataService"}}`},
		{"non-idempotent policies add nothing", func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echo, Timeout: time.Second, WaitForReady: true, Critical: true}}
		}, `{"loadBalancingConfig":[{"prpc_observed_pick_first":{"table":0}}]}`},
		{"idempotent method retried with defaults", func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echo, Idempotent: true}, {Method: echoOther}}
		}, `{"loadBalancingConfig":[{"prpc_observed_pick_first":{"table":0}}],"methodConfig":[{"name":[{"service":"prpctest.TestService","method":"Echo"}],
			"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.050000000s","maxBackoff":"1.000000000s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],
			"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}`},
		{"retry policy", func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echo, Idempotent: true}}
			c.Retry = reactor.RetryPolicy{MaxAttempts: 5, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
				BackoffMultiplier: 1.5, RetryableCodes: []codes.Code{codes.Unavailable, codes.Canceled, codes.ResourceExhausted}, ThrottleMaxTokens: 100, ThrottleTokenRatio: 0.5}
		}, `{"loadBalancingConfig":[{"prpc_observed_pick_first":{"table":0}}],"methodConfig":[{"name":[{"service":"prpctest.TestService","method":"Echo"}],
			"retryPolicy":{"maxAttempts":5,"initialBackoff":"0.010000000s","maxBackoff":"0.020000000s","backoffMultiplier":1.5,"retryableStatusCodes":["UNAVAILABLE","CANCELLED","RESOURCE_EXHAUSTED"]}}],
			"retryThrottling":{"maxTokens":100,"tokenRatio":0.5}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			got, err := reactor.ServiceConfigOf(cfg)
			require.NoError(t, err)
			require.JSONEq(t, tc.want, got)
			// gRPC itself accepts it: grpc.NewClient parses the default service config.
			r, err := reactor.New(cfg)
			require.NoError(t, err)
			require.NoError(t, r.Close(context.Background()))
		})
	}
}

func TestConfigPolicyErrors(t *testing.T) {
	base := reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure(),
		Policies: []reactor.MethodPolicy{{Method: echoOther, Idempotent: true}}}
	var nilMethod *calls.Method[*testpb.EchoRequest, *testpb.EchoResponse]
	tests := []struct {
		name string
		edit func(*reactor.Config)
		want string
	}{
		{"nil policy method", func(c *reactor.Config) { c.Policies = []reactor.MethodPolicy{{Method: nilMethod}} }, "Config.Policies[0].Method"},
		{"duplicate policy", func(c *reactor.Config) { c.Policies = []reactor.MethodPolicy{{Method: echo}, {Method: echo}} }, "Config.Policies[1].Method"},
		{"policy timeout above MaxTimeout", func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echo, Timeout: time.Hour}}
		}, "Config.Policies[0].Timeout"},
		{"negative policy timeout", func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echo, Timeout: -1}}
		}, "Config.Policies[0].Timeout"},
		{"retry attempts", func(c *reactor.Config) { c.Retry.MaxAttempts = 6 }, "Config.Retry.MaxAttempts"},
		{"retry attempts one", func(c *reactor.Config) { c.Retry.MaxAttempts = 1 }, "Config.Retry.MaxAttempts"},
		{"retry backoff", func(c *reactor.Config) { c.Retry.InitialBackoff = -1 }, "Config.Retry.InitialBackoff"},
		{"retry max backoff", func(c *reactor.Config) {
			c.Retry.InitialBackoff = time.Second
			c.Retry.MaxBackoff = time.Millisecond
		}, "Config.Retry.MaxBackoff"},
		{"retry multiplier", func(c *reactor.Config) { c.Retry.BackoffMultiplier = 0.5 }, "Config.Retry.BackoffMultiplier"},
		{"retry OK code", func(c *reactor.Config) { c.Retry.RetryableCodes = []codes.Code{codes.OK} }, "Config.Retry.RetryableCodes[0]"},
		{"retry code 17", func(c *reactor.Config) { c.Retry.RetryableCodes = []codes.Code{17} }, "Config.Retry.RetryableCodes[0]"},
		{"throttle tokens", func(c *reactor.Config) { c.Retry.ThrottleMaxTokens = 1001 }, "Config.Retry.ThrottleMaxTokens"},
		{"throttle ratio", func(c *reactor.Config) { c.Retry.ThrottleTokenRatio = 2 }, "Config.Retry.ThrottleTokenRatio"},
		{"critical reserve", func(c *reactor.Config) { c.MaxOutstanding = 10; c.CriticalReserve = 10 }, "Config.CriticalReserve"},
		{"critical reserve negative", func(c *reactor.Config) { c.CriticalReserve = -2 }, "Config.CriticalReserve"},
		{"retry without idempotent methods", func(c *reactor.Config) {
			c.Policies = nil
			c.Retry.MaxAttempts = 4
		}, "Config.Retry"},
		{"targets and target", func(c *reactor.Config) { c.Targets = []string{"127.0.0.1:1"} }, "exclusive"},
		{"empty target in list", func(c *reactor.Config) { c.Target = ""; c.Targets = []string{"127.0.0.1:1", ""} }, "Config.Targets[1]"},
		{"duplicate target", func(c *reactor.Config) { c.Target = ""; c.Targets = []string{"127.0.0.1:1", "127.0.0.1:1"} }, "Config.Targets[1]"},
		{"balancer", func(c *reactor.Config) { c.LoadBalancing = "weighted" }, "Config.LoadBalancing"},
		{"health with pick_first", func(c *reactor.Config) { c.HealthCheck = true; c.LoadBalancing = "pick_first" }, "Config.LoadBalancing"},
		{"health service without health", func(c *reactor.Config) { c.HealthCheckService = "x" }, "Config.HealthCheckService"},
		{"service config and generated", func(c *reactor.Config) { c.ServiceConfig = "{}"; c.HealthCheck = true }, "Config.ServiceConfig"},
		{"conn and idempotent", func(c *reactor.Config) {
			c.Target, c.Credentials = "", nil
			c.Conn = reactortest.NewBackend()
			c.Policies = []reactor.MethodPolicy{{Method: echo, Idempotent: true}}
		}, "Config.Conn"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := base
			tc.edit(&cfg)
			_, err := reactor.New(cfg)
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}
