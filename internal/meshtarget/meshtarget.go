// Package meshtarget tells the gRPC targets whose resolver supplies the service config
// itself (xDS), for package reactor, which dials them with it, and package reactortest,
// which keeps such a target in a production Config so that its rules apply in tests.
package meshtarget

import (
	"net/url"
	"slices"
)

// Schemes are the resolver schemes whose resolver supplies the service config itself,
// balancing and retries included, and for which the default service config prpc generates
// would replace what the resolver says: xds (gRPC's proxyless service mesh, which hands the
// connection the listener's routes and the clusters' balancers as a service config and a
// config selector) and google-c2p (Google's direct path, which runs xDS underneath).
var Schemes = []string{"xds", "google-c2p"}

// Scheme returns the scheme of target if its resolver supplies the service config
// (Schemes), as gRPC parses the target: a URI whose scheme, lowercased, names the resolver.
// It returns "" for any other target, "host:port" included.
func Scheme(target string) string {
	u, err := url.Parse(target)
	if err != nil || !slices.Contains(Schemes, u.Scheme) {
		return ""
	}
	return u.Scheme
}
