package reactor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/keepalive"

	"github.com/trixnew/prpc/reactor"
)

// TestConfigConnDialOnly checks that with a Config.Conn of the caller's and no
// Config.ConnServiceConfig, New rejects each setting of a connection prpc dials and names
// exactly those that are set, and tells how to carry those of the service config.
func TestConfigConnDialOnly(t *testing.T) {
	const (
		one  = " applies to a connection prpc dials; with Config.Conn, set it on the connection"
		many = " apply to a connection prpc dials; with Config.Conn, set them on the connection"
		sc   = " (balancing, health checking and retries in its service config: dial Conn with the one Config.ServiceConfigJSON returns and set Config.ConnServiceConfig to it)"
	)
	tests := []struct {
		name string
		edit func(*reactor.Config)
		want string
	}{
		{"Credentials", func(c *reactor.Config) { c.Credentials = reactor.Insecure() }, "Config.Credentials" + one},
		{"DialOptions", func(c *reactor.Config) { c.DialOptions = []grpc.DialOption{grpc.WithUserAgent("x")} }, "Config.DialOptions" + one},
		{"ServiceConfig", func(c *reactor.Config) { c.ServiceConfig = `{}` }, "Config.ServiceConfig" + one},
		{"ServiceConfigLookup", func(c *reactor.Config) { c.ServiceConfigLookup = true }, "Config.ServiceConfigLookup" + one},
		{"Backoff", func(c *reactor.Config) { c.Backoff.BaseDelay = time.Second }, "Config.Backoff" + one},
		{"Backoff, Jitter only", func(c *reactor.Config) { c.Backoff.Jitter = 0.5 }, "Config.Backoff" + one},
		{"Keepalive", func(c *reactor.Config) { c.Keepalive.Time = time.Minute }, "Config.Keepalive" + one},
		{"Keepalive, PermitWithoutStream only", func(c *reactor.Config) { c.Keepalive.PermitWithoutStream = true }, "Config.Keepalive" + one},
		{"LoadBalancing", func(c *reactor.Config) { c.LoadBalancing = "round_robin" }, "Config.LoadBalancing" + one + sc},
		{"HealthCheck", func(c *reactor.Config) { c.HealthCheck = true }, "Config.HealthCheck" + one + sc},
		{"HealthCheckService", func(c *reactor.Config) { c.HealthCheckService = "svc" }, "Config.HealthCheckService" + one + sc},
		{"idempotent policy", func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echoOther, Critical: true}, {Method: echo, Idempotent: true}}
		}, "Config.Policies[1] (idempotent /prpctest.TestService/Echo)" + one + sc},
		{"two idempotent policies", func(c *reactor.Config) {
			c.Policies = []reactor.MethodPolicy{{Method: echo, Idempotent: true}, {Method: otherMethod}, {Method: echoOther, Idempotent: true}}
		}, "Config.Policies[0] (idempotent /prpctest.TestService/Echo) and Config.Policies[2] (idempotent /prpctest.Other/Echo)" + many + sc},
		{"Retry", func(c *reactor.Config) { c.Retry.MaxAttempts = 4 }, "Config.Retry" + one + sc},
		{"Credentials and Keepalive", func(c *reactor.Config) {
			c.Credentials = reactor.Insecure()
			c.Keepalive = keepalive.ClientParameters{Time: time.Minute}
		}, "Config.Credentials and Config.Keepalive" + many},
		{"everything", func(c *reactor.Config) {
			c.Credentials = reactor.Insecure()
			c.DialOptions = []grpc.DialOption{grpc.WithUserAgent("x")}
			c.ServiceConfig = `{}`
			c.ServiceConfigLookup = true
			c.Backoff.MaxDelay = time.Second
			c.Keepalive.Timeout = time.Second
			c.LoadBalancing = "pick_first"
			c.HealthCheck = true
			c.HealthCheckService = "svc"
			c.Policies = []reactor.MethodPolicy{{Method: echo, Idempotent: true}}
			c.Retry.ThrottleMaxTokens = 5
		}, "Config.Credentials, Config.DialOptions, Config.ServiceConfig, Config.ServiceConfigLookup, Config.Backoff, " +
			"Config.Keepalive, Config.LoadBalancing, Config.HealthCheck, Config.HealthCheckService, " +
			"Config.Policies[0] (idempotent /prpctest.TestService/Echo) and Config.Retry" + many + sc},
	}
	fake := &recordingConn{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := reactor.Config{Conn: fake}
			tt.edit(&cfg)
			r, err := reactor.New(cfg)
			require.Nil(t, r)
			require.EqualError(t, err, "prpc: "+tt.want)
		})
	}
	require.Empty(t, fake.recorded(), "no rejected config may make a call")

	// Policies that are not idempotent belong to the reactor: accepted with any Conn.
	r := newReactor(t, nil, reactor.Config{Conn: fake, Policies: []reactor.MethodPolicy{{Method: echo, Critical: true, Timeout: time.Second}}})
	require.NotNil(t, r)
}
