package xdstest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	clusterv3 "github.com/envoyproxy/go-control-plane/envoy/config/cluster/v3"
	corev3 "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	endpointv3 "github.com/envoyproxy/go-control-plane/envoy/config/endpoint/v3"
	listenerv3 "github.com/envoyproxy/go-control-plane/envoy/config/listener/v3"
	routev3 "github.com/envoyproxy/go-control-plane/envoy/config/route/v3"
	routerv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/http/router/v3"
	hcmv3 "github.com/envoyproxy/go-control-plane/envoy/extensions/filters/network/http_connection_manager/v3"
	discoveryv3 "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	"github.com/envoyproxy/go-control-plane/pkg/cache/types"
	cachev3 "github.com/envoyproxy/go-control-plane/pkg/cache/v3"
	resourcev3 "github.com/envoyproxy/go-control-plane/pkg/resource/v3"
	serverv3 "github.com/envoyproxy/go-control-plane/pkg/server/v3"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	testgrpc "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/xds"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/anypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// The names of the mesh's resources. The target is "xds:///" + service: gRPC's xDS resolver
// asks the control plane for the listener named service.
const (
	service     = "prpc-svc"
	routeName   = "prpc-route"
	clusterName = "prpc-cluster"
	nodeID      = "prpc-xdstest"
	target      = "xds:///" + service
)

// controlPlane is an xDS management server on loopback: go-control-plane's snapshot cache
// served over ADS. One serves all the tests of the package, one at a time (none is parallel):
// each sets the mesh it needs.
type controlPlane struct {
	cache   cachev3.SnapshotCache
	addr    string
	version int
}

// cp is the package's control plane, started by TestMain.
var cp *controlPlane

// TestMain starts the control plane and registers gRPC's xDS resolver for it, as the
// program's bootstrap would, before any test dials.
func TestMain(m *testing.M) {
	var stop func()
	var err error
	cp, stop, err = startControlPlane()
	if err == nil {
		err = cp.register()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "prpc-xdstest:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// startControlPlane starts a management server that serves nothing until set is called.
func startControlPlane() (*controlPlane, func(), error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	cp := &controlPlane{cache: cachev3.NewSnapshotCache(true, cachev3.IDHash{}, nil), addr: lis.Addr().String()}
	ctx, cancel := context.WithCancel(context.Background())
	gs := grpc.NewServer()
	discoveryv3.RegisterAggregatedDiscoveryServiceServer(gs, serverv3.NewServer(ctx, cp.cache, nil))
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = gs.Serve(lis)
	}()
	return cp, func() {
		cancel()
		gs.Stop()
		<-served
	}, nil
}

// register registers gRPC's xDS resolver, with a bootstrap that points at cp, for the
// scheme "xds", in place of the one the blank import of google.golang.org/grpc/xds
// registers. A program sets the same bootstrap in the GRPC_XDS_BOOTSTRAP file or the
// GRPC_XDS_BOOTSTRAP_CONFIG variable instead, which gRPC reads once per process, at start:
// a test whose control plane listens on an ephemeral port cannot use them.
func (cp *controlPlane) register() error {
	bootstrap := fmt.Sprintf(`{
		"xds_servers": [{"server_uri": %q, "channel_creds": [{"type": "insecure"}], "server_features": ["xds_v3"]}],
		"node": {"id": %q}
	}`, cp.addr, nodeID)
	b, err := xds.NewXDSResolverWithConfigForTesting([]byte(bootstrap))
	if err != nil {
		return err
	}
	resolver.Register(b)
	return nil
}

// mesh is what the control plane serves: a listener for service whose routes (by RDS) send
// every call to one EDS cluster, balanced round robin over endpoints, with the route's retry
// policy if retry is set.
type mesh struct {
	endpoints []*backend
	retry     *routev3.RetryPolicy
}

// set serves m, as a new version of the snapshot.
func (cp *controlPlane) set(t *testing.T, m mesh) {
	t.Helper()
	cp.version++
	ads := &corev3.ConfigSource{
		ConfigSourceSpecifier: &corev3.ConfigSource_Ads{Ads: &corev3.AggregatedConfigSource{}},
		ResourceApiVersion:    corev3.ApiVersion_V3,
	}
	hcm := &hcmv3.HttpConnectionManager{
		RouteSpecifier: &hcmv3.HttpConnectionManager_Rds{Rds: &hcmv3.Rds{ConfigSource: ads, RouteConfigName: routeName}},
		HttpFilters: []*hcmv3.HttpFilter{{
			Name:       "router",
			ConfigType: &hcmv3.HttpFilter_TypedConfig{TypedConfig: mustAny(t, &routerv3.Router{})},
		}},
	}
	listener := &listenerv3.Listener{
		Name:        service,
		ApiListener: &listenerv3.ApiListener{ApiListener: mustAny(t, hcm)},
	}
	route := &routev3.RouteConfiguration{
		Name: routeName,
		VirtualHosts: []*routev3.VirtualHost{{
			Name:    "prpc-vhost",
			Domains: []string{"*"},
			Routes: []*routev3.Route{{
				Match: &routev3.RouteMatch{PathSpecifier: &routev3.RouteMatch_Prefix{Prefix: "/"}},
				Action: &routev3.Route_Route{Route: &routev3.RouteAction{
					ClusterSpecifier: &routev3.RouteAction_Cluster{Cluster: clusterName},
					RetryPolicy:      m.retry,
				}},
			}},
		}},
	}
	cluster := &clusterv3.Cluster{
		Name:                 clusterName,
		ClusterDiscoveryType: &clusterv3.Cluster_Type{Type: clusterv3.Cluster_EDS},
		EdsClusterConfig:     &clusterv3.Cluster_EdsClusterConfig{EdsConfig: ads, ServiceName: clusterName},
		LbPolicy:             clusterv3.Cluster_ROUND_ROBIN,
	}
	var lbEndpoints []*endpointv3.LbEndpoint
	for _, b := range m.endpoints {
		lbEndpoints = append(lbEndpoints, &endpointv3.LbEndpoint{
			HostIdentifier: &endpointv3.LbEndpoint_Endpoint{Endpoint: &endpointv3.Endpoint{
				Address: &corev3.Address{Address: &corev3.Address_SocketAddress{SocketAddress: &corev3.SocketAddress{
					Address:       "127.0.0.1",
					PortSpecifier: &corev3.SocketAddress_PortValue{PortValue: b.port},
				}}},
			}},
			HealthStatus: corev3.HealthStatus_HEALTHY,
		})
	}
	endpoints := &endpointv3.ClusterLoadAssignment{
		ClusterName: clusterName,
		Endpoints: []*endpointv3.LocalityLbEndpoints{{
			Locality: &corev3.Locality{Region: "prpc-region"},
			// gRPC ignores a locality without a weight.
			LoadBalancingWeight: wrapperspb.UInt32(1),
			LbEndpoints:         lbEndpoints,
		}},
	}
	snap, err := cachev3.NewSnapshot(strconv.Itoa(cp.version), map[resourcev3.Type][]types.Resource{
		resourcev3.ListenerType: {listener},
		resourcev3.RouteType:    {route},
		resourcev3.ClusterType:  {cluster},
		resourcev3.EndpointType: {endpoints},
	})
	// Not snap.Consistent(): it does not follow an api_listener's RDS reference, the kind
	// gRPC's clients use, and would report the route as unreferenced.
	require.NoError(t, err)
	require.NoError(t, cp.cache.SetSnapshot(context.Background(), nodeID, snap))
}

func mustAny(t *testing.T, m proto.Message) *anypb.Any {
	t.Helper()
	a, err := anypb.New(m)
	require.NoError(t, err)
	return a
}

// backend is a grpc-go server of grpc.testing.TestService's UnaryCall on loopback, which
// counts its calls and fails each with Unavailable while failing is set.
type backend struct {
	testgrpc.UnimplementedTestServiceServer
	addr    string
	port    uint32
	calls   atomic.Int64
	failing atomic.Bool
}

// startBackends starts n backends and stops them when the test ends.
func startBackends(t *testing.T, n int) []*backend {
	t.Helper()
	var out []*backend
	for range n {
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		b := &backend{addr: lis.Addr().String(), port: uint32(lis.Addr().(*net.TCPAddr).Port)}
		gs := grpc.NewServer()
		testgrpc.RegisterTestServiceServer(gs, b)
		served := make(chan struct{})
		go func() {
			defer close(served)
			_ = gs.Serve(lis)
		}()
		t.Cleanup(func() {
			gs.Stop()
			<-served
		})
		out = append(out, b)
	}
	return out
}

func (b *backend) UnaryCall(context.Context, *testgrpc.SimpleRequest) (*testgrpc.SimpleResponse, error) {
	b.calls.Add(1)
	if b.failing.Load() {
		return nil, status.Error(codes.Unavailable, "prpc-xdstest: this backend fails every call")
	}
	return &testgrpc.SimpleResponse{Hostname: b.addr}, nil
}

// counts returns each backend's calls.
func counts(bs []*backend) []int64 {
	out := make([]int64, len(bs))
	for i, b := range bs {
		out[i] = b.calls.Load()
	}
	return out
}

// since returns now − before, element-wise.
func since(now, before []int64) []int64 {
	out := make([]int64, len(now))
	for i := range now {
		out[i] = now[i] - before[i]
	}
	return out
}
