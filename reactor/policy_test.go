package reactor_test

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
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

			// ServiceConfigJSON returns the same, naming gRPC's balancer instead of prpc's
			// wrapper, which only a connection New dials can use; gRPC accepts it too.
			exported, err := cfg.ServiceConfigJSON()
			require.NoError(t, err)
			plain := strings.NewReplacer(`"prpc_observed_round_robin":{"table":0}`, `"round_robin":{}`,
				`"prpc_observed_pick_first":{"table":0}`, `"pick_first":{}`).Replace(tc.want)
			require.JSONEq(t, plain, exported)
			cc, err := grpc.NewClient("127.0.0.1:1", grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultServiceConfig(exported))
			require.NoError(t, err)
			require.NoError(t, cc.Close())
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
			c.Conn = &recordingConn{} // a reactortest.Backend accepts them
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

// TestPolicyTimeout checks which timeout a call gets: its Options.Timeout if set (shorter
// or longer than its method's), else its method's policy Timeout, else DefaultTimeout. A
// manual clock makes the deadlines exact; the handlers hold every call until its context
// ends, and the calls' real-time gRPC deadlines (10 s and more) are far beyond the
// milliseconds the test takes, so only the reactor's own deadlines settle them.
func TestPolicyTimeout(t *testing.T) {
	entered := make(chan string, 8)
	stall := func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		entered <- req.GetMessage()
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	srv := startBoth(t, stall)
	clk := reactortest.NewManualClock(time.Now())
	r := newReactor(t, srv, reactor.Config{
		Clock:          clk,
		MaxTimeout:     time.Minute,
		DefaultTimeout: 10 * time.Second,
		Policies:       []reactor.MethodPolicy{{Method: echo, Timeout: 30 * time.Second}},
	})
	t.Cleanup(srv.Stop) // before Close: ends the held calls if the test fails early
	h := newHost(t, r)
	// In the order they expire, 10 s apart.
	cases := []struct {
		o       *call
		timeout time.Duration
	}{
		{h.submit(echoOther, echoReq("default"), nil), 10 * time.Second},                                  // no policy: DefaultTimeout
		{h.submit(echo, echoReq("shorter"), &calls.Options{Timeout: 20 * time.Second}), 20 * time.Second}, // overrides the policy
		{h.submit(echo, echoReq("policy"), nil), 30 * time.Second},                                        // the policy's
		{h.submit(echo, echoReq("longer"), &calls.Options{Timeout: 40 * time.Second}), 40 * time.Second},  // overrides the policy
	}
	for range cases { // all in flight: the deadlines below are the reactor's, not "never sent"
		recv(t, entered, "a call at the server")
	}
	for i, c := range cases {
		clk.Advance(10 * time.Second)
		h.waitFor(c.o.done)
		require.ErrorIs(t, c.o.err, calls.ErrTimeout, "call %s", c.o.id)
		require.Contains(t, c.o.err.Error(), "(timeout "+c.timeout.String()+")", "call %s", c.o.id)
		// The Tick that delivered it delivered everything due at the same time: the calls
		// with later deadlines are still pending.
		for _, later := range cases[i+1:] {
			require.False(t, later.o.done(), "call %s settled at %v", later.o.id, c.timeout)
		}
	}
}

// TestPolicyWaitForReady checks that a method policy's WaitForReady makes its calls wait
// for a backend that comes up after they were submitted, as Options.WaitForReady does, while
// other calls fail at once with Unavailable.
func TestPolicyWaitForReady(t *testing.T) {
	// Reserve a port: nothing listens on it until the server starts below.
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := lis.Addr().String()
	require.NoError(t, lis.Close())

	r := newReactor(t, nil, reactor.Config{
		Target:   addr,
		Policies: []reactor.MethodPolicy{{Method: echo, WaitForReady: true}},
		// 5 s: far more than the fail-fast call and the reconnect (fastBackoff) take.
		DefaultTimeout: 5 * time.Second,
		Backoff:        fastBackoff,
	})
	h := newHost(t, r)
	byPolicy := h.submit(echo, echoReq("policy"), nil)
	byOption := h.submit(echoOther, echoReq("option"), &calls.Options{WaitForReady: true})
	fast := h.submit(echoOther, echoReq("fast"), nil)
	forcedFast := h.submit(echo, echoReq("forced fast"), &calls.Options{FailFast: true})
	h.waitFor(func() bool { return fast.done() && forcedFast.done() })
	require.Equal(t, codes.Unavailable, status.Code(fast.err), "the call without WaitForReady: %v", fast.err)
	require.Equal(t, codes.Unavailable, status.Code(forcedFast.err), "Options.FailFast overrides the policy: %v", forcedFast.err)
	both := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{WaitForReady: true, FailFast: true})
	require.ErrorIs(t, both.Err(), calls.ErrInvalidArgument)
	require.False(t, byPolicy.done(), "the call whose method waits for ready settled: %v", byPolicy.err)
	require.False(t, byOption.done(), "the call with Options.WaitForReady settled: %v", byOption.err)

	srv := testserver.StartOn(t, addr, withOther(func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	}))
	h.settle()
	require.NoError(t, byPolicy.err)
	require.NoError(t, byOption.err)
	require.EqualValues(t, 1, srv.Calls(), "the Echo call reached the server once")
}
