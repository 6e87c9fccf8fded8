package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/resolver/manual"

	"github.com/trixnew/prpc/reactor"
)

// TestConfigTargetScheme: New rejects a Config.Target written with a scheme that no resolver
// is registered for, naming the field, the target, the scheme, the registered schemes and how
// to register one, since gRPC would otherwise take it whole for a host name and fail every
// call as if the name did not exist; so is "xds:svc" without gRPC's xds package, whose
// resolver would own its service config. Targets gRPC resolves as it always has are accepted:
// "host:port", whose host gRPC's URI parser reads as a scheme; registered schemes; a scheme
// whose resolver comes in DialOptions; and any address of Config.Targets. No accepted target
// reaches a host outside loopback: port 1 refuses, and the reactor is closed at once.
func TestConfigTargetScheme(t *testing.T) {
	withFoo := []grpc.DialOption{grpc.WithResolvers(manual.NewBuilderWithScheme("foo"))}
	tests := []struct {
		name     string
		target   string
		targets  []string
		dialOpts []grpc.DialOption
		scheme   string // "" if New must accept the config
	}{
		{name: "IPv4 host:port", target: "127.0.0.1:1"},
		{name: "IPv6 host:port", target: "[::1]:1"},
		{name: "host that parses as a scheme", target: "localhost:1"},
		{name: "dns", target: "dns:///localhost:1"},
		{name: "dns, upper-case scheme", target: "DNS:///localhost:1"},
		{name: "passthrough", target: "passthrough:///127.0.0.1:1"},
		{name: "unix, absolute", target: "unix:///prpc-test-no-such-socket"},
		{name: "unix, relative", target: "unix:prpc-test-no-such-socket"},
		{name: "resolver in DialOptions", target: "foo:///x", dialOpts: withFoo},
		{name: "Targets entry with a scheme", targets: []string{"foo:///x"}},

		{name: "unknown scheme", target: "foo:///x", scheme: "foo"},
		{name: "unknown scheme with authority", target: "foo://authority/x", scheme: "foo"},
		{name: "unknown scheme, one slash", target: "foo:/x", scheme: "foo"},
		{name: "unknown scheme, upper case", target: "Foo:///x", scheme: "foo"},
		{name: "another scheme in DialOptions", target: "bar:///x", dialOpts: withFoo, scheme: "bar"},
		{name: "xds without its package, opaque", target: "xds:svc", scheme: "xds"},
		{name: "xds without its package", target: "xds:///svc", scheme: "xds"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := reactor.New(reactor.Config{
				Target: tt.target, Targets: tt.targets, DialOptions: tt.dialOpts,
				Credentials: reactor.Insecure(),
			})
			if tt.scheme == "" {
				require.NoError(t, err)
				// Close is bounded by the default MaxTimeout; 10 s is a wide margin under -race.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				require.NoError(t, r.Close(ctx))
				return
			}
			require.Error(t, err)
			t.Log(err)
			for _, want := range []string{"Config.Target", `"` + tt.target + `"`, `scheme "` + tt.scheme + `"`,
				"dns, passthrough, unix", "grpc.WithResolvers", "Config.DialOptions", "import"} {
				require.Contains(t, err.Error(), want)
			}
		})
	}
}
