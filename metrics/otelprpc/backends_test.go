package otelprpc_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// peerConn is a connection to a Backend that reports, as gRPC does through grpc.Peer, the
// backend a call reached: the address named by the request's value.
type peerConn struct {
	b     *reactortest.Backend
	addrs map[string]net.Addr
}

func (c *peerConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	for _, o := range opts {
		if p, ok := o.(grpc.PeerCallOption); ok {
			*p.PeerAddr = peer.Peer{Addr: c.addrs[args.(*wrapperspb.StringValue).GetValue()]}
		}
	}
	return c.b.Invoke(ctx, method, args, reply, opts...)
}

func (c *peerConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "unary only")
}

// TestBackends checks the backend metrics WithBackends adds: transport calls and failures by
// backend address, with the reactor's name.
func TestBackends(t *testing.T) {
	b := reactortest.NewBackend()
	reactortest.Handle(b, get, func(_ context.Context, req *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
		if req.GetValue() == "b" {
			return nil, status.Error(codes.Unavailable, "draining")
		}
		return wrapperspb.String("item"), nil
	})
	conn := &peerConn{b: b, addrs: map[string]net.Addr{
		"a": &net.TCPAddr{IP: net.IPv4(10, 0, 0, 1), Port: 50051},
		"b": &net.TCPAddr{IP: net.IPv4(10, 0, 0, 2), Port: 50051},
	}}
	r, err := reactor.New(reactor.Config{Conn: conn})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })

	with, without := otelprpc.NewProducer(otelprpc.WithBackends()), otelprpc.NewProducer()
	with.AddReactor(r, "world")
	without.AddReactor(r, "")
	withReader, withoutReader := newReader(t, with), newReader(t, without)

	for _, item := range []string{"a", "a", "b"} {
		reactor.Call(r, get, wrapperspb.String(item), nil)
	}
	reactortest.Flush(t, r)

	got := collect(t, withReader)
	requireSpec(t, got, append(reactorSpec, backendSpec...), "prpc.reactor")
	server := func(addr string, extra ...attribute.KeyValue) attribute.Set {
		return attrs(append([]attribute.KeyValue{
			attribute.String("rpc.system", "grpc"), attribute.String("server.address", addr), attribute.String("prpc.reactor", "world"),
		}, extra...)...)
	}
	code := attribute.Int64("rpc.grpc.status_code", int64(codes.Unavailable))
	require.Equal(t, int64(2), counterValue(t, got["prpc.backend.calls"], server("10.0.0.1:50051")))
	require.Equal(t, int64(1), counterValue(t, got["prpc.backend.calls"], server("10.0.0.2:50051")))
	require.Equal(t, int64(1), counterValue(t, got["prpc.backend.failed"], server("10.0.0.2:50051", code)))
	require.Len(t, counters(t, got["prpc.backend.failed"]), 1, "no failure at 10.0.0.1")
	require.Equal(t, int64(0), counterValue(t, got["prpc.backend.hedges_lost"], server("10.0.0.1:50051")))
	require.Equal(t, int64(0), counterValue(t, got["prpc.backend.hedges_lost"], server("10.0.0.2:50051")))

	for _, s := range backendSpec {
		require.NotContains(t, collect(t, withoutReader), s.name, "without WithBackends")
	}
}

// backendRow is a backend row of a snapshot, for TestBackendResets.
type backendRow struct {
	addr          string
	calls, failed uint64 // failed with Unavailable
	hedgesLost    uint64
}

// TestBackendResets feeds snapshots to a reactor's source and checks the start time of each
// backend's series: the reactor's start while a row goes on, and the time the last collection
// read its snapshot for a row that is new, came back after a collection without it, or whose
// counts decreased (a row removed and made anew, which counts from zero).
func TestBackendResets(t *testing.T) {
	start := epoch
	read := func(i int) time.Time { return epoch.Add(time.Duration(i+1) * time.Minute) } // never start
	steps := []struct {
		rows       []backendRow
		wantStarts map[string]time.Time
	}{
		0: {[]backendRow{{"a", 5, 0, 0}, {"b", 3, 1, 2}}, map[string]time.Time{"a": start, "b": start}},
		1: {[]backendRow{{"a", 7, 0, 0}, {"b", 3, 1, 2}, {"c", 1, 0, 0}}, map[string]time.Time{"a": start, "b": start, "c": read(0)}},
		2: {[]backendRow{{"a", 2, 0, 0}, {"b", 3, 0, 2}, {"c", 1, 0, 0}}, map[string]time.Time{"a": read(1), "b": read(1), "c": read(0)}},
		3: {[]backendRow{{"b", 3, 0, 1}, {"c", 1, 0, 0}}, map[string]time.Time{"b": read(2), "c": read(0)}},
		4: {[]backendRow{{"a", 9, 0, 0}, {"b", 4, 0, 1}, {"c", 1, 0, 0}}, map[string]time.Time{"a": read(3), "b": read(2), "c": read(0)}},
	}
	src := otelprpc.NewStatsSource("", start, true)
	for i, step := range steps {
		var st reactor.Stats
		for _, row := range step.rows {
			b := reactor.BackendStats{Addr: row.addr, Calls: row.calls, HedgesLost: row.hedgesLost, Failed: map[codes.Code]uint64{}}
			if row.failed > 0 {
				b.Failed[codes.Unavailable] = row.failed
			}
			st.Backends = append(st.Backends, b)
		}
		got := byName(t, src.Collect(st, read(i), read(i).Add(time.Second)))
		starts := map[string]time.Time{}
		for _, p := range got["prpc.backend.calls"].Data.(metricdata.Sum[int64]).DataPoints {
			addr, _ := p.Attributes.Value("server.address")
			starts[addr.AsString()] = p.StartTime
			require.Equal(t, read(i).Add(time.Second), p.Time)
		}
		require.Equal(t, step.wantStarts, starts, "step %d", i)
		for _, name := range []string{"prpc.backend.failed", "prpc.backend.hedges_lost"} {
			m, ok := got[name]
			if !ok {
				require.Equal(t, "prpc.backend.failed", name, "step %d: only failures may be absent", i)
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				addr, _ := p.Attributes.Value("server.address")
				require.Equal(t, step.wantStarts[addr.AsString()], p.StartTime, "step %d: %s of %s", i, name, addr.AsString())
			}
		}
	}
}
