package reactor

import (
	"net"

	"google.golang.org/grpc"
	_ "google.golang.org/grpc/health" // registers client-side health checking (Config.HealthCheck)
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
)

// staticScheme is the resolver scheme of Config.Targets. The resolver is passed to one
// connection with grpc.WithResolvers, never registered globally.
const staticScheme = "prpc-static"

// staticResolver returns the target and dial option that make a connection use addrs as its
// backends. Each address is verified by TLS against its own host name, as if it were dialled
// alone (a server name set in the credentials takes precedence).
func staticResolver(addrs []string) (string, grpc.DialOption) {
	rb := manual.NewBuilderWithScheme(staticScheme)
	state := resolver.State{Addresses: make([]resolver.Address, len(addrs))}
	for i, a := range addrs {
		host, _, err := net.SplitHostPort(a)
		if err != nil {
			host = a
		}
		state.Addresses[i] = resolver.Address{Addr: a, ServerName: host}
	}
	rb.InitialState(state)
	return staticScheme + ":///backends", grpc.WithResolvers(rb)
}
