package reactor_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
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
