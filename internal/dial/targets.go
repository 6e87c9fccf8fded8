package dial

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"

	"google.golang.org/grpc"
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

// wellKnownSchemes are the resolver schemes of grpc-go and its own packages, in the order an
// error lists those registered. grpc-go offers no list of the registered schemes.
var wellKnownSchemes = []string{"dns", "passthrough", "unix", "unix-abstract", "xds", "google-c2p"}

// unresolvedScheme returns the scheme of target if target is written as a URI with a scheme
// ("scheme:/…" or "scheme://…") and gRPC found no resolver for it, neither registered nor
// passed with grpc.WithResolvers, and fell back to DNS, its default scheme: it then takes the
// whole target for a DNS name, which never resolves, and every call fails as if the name did
// not exist. canonical is the target as the connection parsed it
// (grpc.ClientConn.CanonicalTarget). Otherwise it returns "": in particular for "host:port",
// whose host gRPC's URI parser reads as a scheme and which gRPC resolves with DNS by design,
// and when a program changed gRPC's default scheme (resolver.SetDefaultScheme), whose
// resolver may take such a target as it is.
func unresolvedScheme(target, canonical string) string {
	u, err := url.Parse(target)
	if err != nil || u.Scheme == "" || !strings.HasPrefix(target[len(u.Scheme)+1:], "/") {
		return ""
	}
	// url.Parse lowercases the scheme, as gRPC's lookup sees it; gRPC prefixes the default
	// scheme to the target it falls back from.
	if u.Scheme == "dns" || !strings.HasPrefix(canonical, "dns:///"+target) {
		return ""
	}
	return u.Scheme
}

// unresolvedSchemeError is the error of a Config.Target whose scheme has no resolver. It
// lists the well-known schemes registered at the time of the call.
func unresolvedSchemeError(target, scheme string) error {
	var registered []string
	for _, s := range wellKnownSchemes {
		if resolver.Get(s) != nil {
			registered = append(registered, s)
		}
	}
	return fmt.Errorf(
		"prpc: Config.Target is %s; no gRPC resolver is registered for its scheme %q (grpc-go's registered: %s); import the package that registers it, or pass its builder in Config.DialOptions with grpc.WithResolvers; a \"host:port\" target needs no scheme",
		strconv.Quote(target), scheme, strings.Join(registered, ", "))
}

// resolvedWith reports whether gRPC resolves a connection whose canonical target
// (grpc.ClientConn.CanonicalTarget) is canonical with the resolver of scheme, rather than
// taking the whole target for a DNS name.
func resolvedWith(canonical, scheme string) bool {
	return strings.HasPrefix(strings.ToLower(canonical), scheme+":")
}
