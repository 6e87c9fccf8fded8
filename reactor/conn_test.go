package reactor_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// TestConnStreamBesideCalls checks Reactor.Conn on a connection prpc dialled: a
// server-streaming call (grpc.health.v1's Watch) made with grpc-go's generated stub runs
// beside prpc's calls on the same connection, through prpc's balancer wrapper, which finds no
// slot for the picked backend in the stream's context; prpc's calls complete through Tick
// while it runs, and neither Stats nor MaxOutstanding counts it. Then Close or Shutdown, which
// wait only for prpc's calls, close the connection: the stream and a unary call still running
// through Conn end with Canceled, and a later call through Conn fails with Canceled.
func TestConnStreamBesideCalls(t *testing.T) {
	for _, tc := range []struct {
		name    string
		targets bool // Targets (round_robin) rather than Target (pick_first)
		stop    func(*reactor.Reactor, context.Context) error
	}{
		{"Target, Close", false, (*reactor.Reactor).Close},
		{"Targets, Close", true, (*reactor.Reactor).Close},
		{"Targets, Shutdown", true, (*reactor.Reactor).Shutdown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			healths, srvs, addrs := healthServers(t, 1)
			cfg := reactor.Config{Target: addrs[0], MaxOutstanding: 1}
			if tc.targets {
				cfg = reactor.Config{Targets: addrs, MaxOutstanding: 1}
			}
			r := newReactor(t, nil, longTimeouts(cfg))
			g := newGate(t, srvs[0])
			ctx, cancel := context.WithTimeout(context.Background(), bound)
			defer cancel()

			watch, err := healthpb.NewHealthClient(r.Conn()).Watch(ctx, &healthpb.HealthCheckRequest{})
			require.NoError(t, err)
			requireStatus := func(want healthpb.HealthCheckResponse_ServingStatus) {
				t.Helper()
				resp, err := watch.Recv()
				require.NoError(t, err)
				require.Equal(t, want, resp.GetStatus())
			}
			requireStatus(healthpb.HealthCheckResponse_SERVING)

			// prpc's calls, one at a time (MaxOutstanding is 1), while the stream is open;
			// the stream still delivers after them.
			for _, msg := range []string{"a", "b", "c"} {
				_, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: msg}, nil)
				require.NoError(t, err)
				require.Equal(t, msg, resp.GetMessage())
			}
			healths[0].SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
			requireStatus(healthpb.HealthCheckResponse_NOT_SERVING)

			s := r.Stats()
			require.EqualValues(t, 3, s.Submitted, "Stats counts prpc's calls only")
			require.EqualValues(t, 3, s.Succeeded)
			require.Len(t, s.Backends, 1)
			require.EqualValues(t, addrs[0], s.Backends[0].Addr)
			require.EqualValues(t, 3, s.Backends[0].Calls, "the backend's count excludes the stream")

			// A unary call of the caller's through Conn, held by the server, and the stream,
			// both running when the reactor stops.
			unary := make(chan error, 1)
			go func() {
				_, err := testpb.NewTestServiceClient(r.Conn()).Echo(ctx, held("mine"))
				unary <- err
			}()
			g.waitEntered(t, 1)
			streamEnd := make(chan error, 1)
			go func() {
				for {
					if _, err := watch.Recv(); err != nil {
						streamEnd <- err
						return
					}
				}
			}()

			require.NoError(t, tc.stop(r, ctx), "the caller's calls are not prpc's: nothing to cut off")
			for what, ch := range map[string]chan error{"the stream": streamEnd, "the unary call": unary} {
				select {
				case err := <-ch:
					require.Equal(t, codes.Canceled, status.Code(err), "%s: %v", what, err)
				case <-ctx.Done():
					t.Fatalf("%s still runs after the reactor closed", what)
				}
			}
			_, err = testpb.NewTestServiceClient(r.Conn()).Echo(ctx, &testpb.EchoRequest{Message: "late"})
			require.Equal(t, codes.Canceled, status.Code(err), "a call through Conn after Close: %v", err)
		})
	}
}

// TestConnIsConfigConn checks that with Config.Conn, Reactor.Conn returns that connection,
// which the reactor never closes.
func TestConnIsConfigConn(t *testing.T) {
	_, _, addrs := healthServers(t, 1)
	cc, err := grpc.NewClient(addrs[0], grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	r, err := reactor.New(reactor.Config{Conn: cc})
	require.NoError(t, err)
	require.Same(t, cc, r.Conn())
	require.NoError(t, r.Close(context.Background()))

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	resp, err := healthpb.NewHealthClient(r.Conn()).Check(ctx, &healthpb.HealthCheckRequest{})
	require.NoError(t, err, "Close leaves a Config.Conn open")
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
}

// TestServiceConfigJSONChecks checks that ServiceConfigJSON checks a Config as New does,
// naming the field at fault, without needing a connection, and that it ignores Conn and
// ConnServiceConfig.
func TestServiceConfigJSONChecks(t *testing.T) {
	idempotent := []reactor.MethodPolicy{{Method: echo, Idempotent: true}}
	const retried = `{"loadBalancingConfig":[{"pick_first":{}}],"methodConfig":[{"name":[{"service":"prpctest.TestService","method":"Echo"}],
		"retryPolicy":{"maxAttempts":3,"initialBackoff":"0.050000000s","maxBackoff":"1.000000000s","backoffMultiplier":2,"retryableStatusCodes":["UNAVAILABLE"]}}],
		"retryThrottling":{"maxTokens":10,"tokenRatio":0.1}}`
	tests := []struct {
		name string
		cfg  reactor.Config
		want string // JSON, or the error's field
	}{
		{"no connection needed", reactor.Config{}, `{"loadBalancingConfig":[{"pick_first":{}}]}`},
		{"Conn and ConnServiceConfig ignored", reactor.Config{Conn: &recordingConn{}, ConnServiceConfig: "{}", Policies: idempotent}, retried},
		{"ServiceConfig as New uses it", reactor.Config{ServiceConfig: `{"loadBalancingConfig":[{"round_robin":{}}]}`}, `{"loadBalancingConfig":[{"round_robin":{}}]}`},
		{"bad balancer", reactor.Config{LoadBalancing: "weighted"}, "Config.LoadBalancing"},
		{"health with pick_first", reactor.Config{HealthCheck: true, LoadBalancing: "pick_first"}, "Config.LoadBalancing"},
		{"duplicate target", reactor.Config{Targets: []string{"127.0.0.1:1", "127.0.0.1:1"}}, "Config.Targets[1]"},
		{"retry without idempotent methods", reactor.Config{Retry: reactor.RetryPolicy{MaxAttempts: 4}}, "Config.Retry"},
		{"retry attempts", reactor.Config{Policies: idempotent, Retry: reactor.RetryPolicy{MaxAttempts: 9}}, "Config.Retry.MaxAttempts"},
		{"service config and generated", reactor.Config{ServiceConfig: "{}", Policies: idempotent}, "Config.ServiceConfig"},
		{"policy timeout", reactor.Config{Policies: []reactor.MethodPolicy{{Method: echo, Timeout: time.Hour}}}, "Config.Policies[0].Timeout"},
		{"Workers", reactor.Config{Workers: -1}, "Config.Workers"},
		{"Keepalive", reactor.Config{Keepalive: keepalive.ClientParameters{Time: time.Second}}, "Config.Keepalive.Time"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.cfg.ServiceConfigJSON()
			if strings.HasPrefix(tc.want, "{") {
				require.NoError(t, err)
				require.JSONEq(t, tc.want, got)
				return
			}
			require.ErrorContains(t, err, tc.want)
			require.Empty(t, got)
		})
	}
}

// TestConnServiceConfig checks Config.ConnServiceConfig: with it, New accepts the fields of
// the service config (a generated …Policies() among them) with a Conn of the caller's, and
// only if it is what ServiceConfigJSON returns for that Config; it applies only with Conn;
// and the settings of the transport stay refused.
func TestConnServiceConfig(t *testing.T) {
	fake := &recordingConn{}
	full := reactor.Config{
		LoadBalancing: "round_robin", HealthCheck: true, HealthCheckService: "svc",
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true}, {Method: echoOther, Critical: true}},
		Retry:    reactor.RetryPolicy{MaxAttempts: 4},
	}
	sc, err := full.ServiceConfigJSON()
	require.NoError(t, err)
	with := func(edit func(*reactor.Config)) reactor.Config {
		c := full
		c.Conn, c.ConnServiceConfig = fake, sc
		edit(&c)
		return c
	}
	r := newReactor(t, nil, with(func(*reactor.Config) {}))
	require.Same(t, fake, r.Conn())

	for _, tc := range []struct {
		name string
		cfg  reactor.Config
		want string
	}{
		{"another Retry", with(func(c *reactor.Config) { c.Retry.MaxAttempts = 5 }), "prpc: Config.ConnServiceConfig is not the service config of this Config"},
		{"another policy idempotent", with(func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echo, Idempotent: true}, {Method: echoOther, Idempotent: true}}
		}), "prpc: Config.ConnServiceConfig is not the service config of this Config"},
		{"pick_first", with(func(c *reactor.Config) { c.HealthCheck, c.HealthCheckService, c.LoadBalancing = false, "", "" }),
			"prpc: Config.ConnServiceConfig is not the service config of this Config"},
		{"not JSON of the Config", with(func(c *reactor.Config) { c.ConnServiceConfig = "{}" }), "prpc: Config.ConnServiceConfig is not the service config of this Config"},
		{"invalid field still named", with(func(c *reactor.Config) { c.Retry.MaxAttempts = 9 }), "prpc: Config.Retry.MaxAttempts is 9"},
		{"transport settings still refused", with(func(c *reactor.Config) { c.Credentials = reactor.Insecure(); c.Backoff.BaseDelay = time.Second }),
			"prpc: Config.Credentials and Config.Backoff apply to a connection prpc dials; with Config.Conn, set them on the connection"},
		{"without Conn", reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure(), ConnServiceConfig: sc},
			"prpc: Config.ConnServiceConfig applies only with Config.Conn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := reactor.New(tc.cfg)
			require.Nil(t, r)
			require.ErrorContains(t, err, tc.want)
		})
	}
	require.Empty(t, fake.recorded(), "no rejected config may make a call")
}

// TestConnServiceConfigRetries checks the service config of ServiceConfigJSON on a
// connection the caller dials: grpc.NewClient accepts it, and it retries an idempotent
// method's call that fails with Unavailable once (and no other method's), for grpc-go's
// stubs and for prpc's calls alike once the connection is Config.Conn with
// ConnServiceConfig.
func TestConnServiceConfigRetries(t *testing.T) {
	f := newFlaky()
	srv := startBoth(t, f.echo)
	cfg := reactor.Config{
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true}, {Method: echoOther}},
		// Backoff ≤ 20 ms against calls' deadlines of 10 s (bound): a wide margin.
		Retry: reactor.RetryPolicy{InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond},
	}
	sc, err := cfg.ServiceConfigJSON()
	require.NoError(t, err)
	require.NotContains(t, sc, "prpc_", "a connection not dialled by New has no prpc balancer")
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(sc), grpc.WithDisableServiceConfig())
	require.NoError(t, err)
	defer cc.Close()

	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	// grpc-go's stubs on the caller's connection.
	f.fail("stub-idempotent", 1)
	resp, err := testpb.NewTestServiceClient(cc).Echo(ctx, &testpb.EchoRequest{Message: "stub-idempotent"})
	require.NoError(t, err)
	require.Equal(t, "stub-idempotent", resp.GetMessage())
	require.Equal(t, 2, f.attemptsOf("stub-idempotent"))
	f.fail("stub-other", 1)
	err = cc.Invoke(ctx, echoOther.Path(), &testpb.EchoRequest{Message: "stub-other"}, new(testpb.EchoResponse))
	require.Equal(t, codes.Unavailable, status.Code(err), "%v", err)
	require.Equal(t, 1, f.attemptsOf("stub-other"))

	// prpc's calls on it, with the same Config and its policies.
	cfg.Conn, cfg.ConnServiceConfig, cfg.DefaultTimeout = cc, sc, bound
	cfg.MaxTimeout = bound
	r := newReactor(t, nil, cfg)
	f.fail("prpc-idempotent", 1)
	_, resp, err = roundTrip(t, r, &testpb.EchoRequest{Message: "prpc-idempotent"}, nil)
	require.NoError(t, err)
	require.Equal(t, "prpc-idempotent", resp.GetMessage())
	require.Equal(t, 2, f.attemptsOf("prpc-idempotent"))
}
