// Package xdstest tests prpc against a real xDS management server: gRPC's proxyless service
// mesh, a control plane (go-control-plane's snapshot cache over ADS, in process on loopback)
// that steers a prpc reactor dialled with an "xds:///" target over grpc-go backends. It is a
// module of its own so that the library's module needs neither the control plane nor gRPC's
// xds package; its tests are all it has.
package xdstest
