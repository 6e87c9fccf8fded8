package policybench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
)

func TestFailoverCases(t *testing.T) {
	var names []string
	cases := FailoverCases(DefaultFailover())
	for _, c := range cases {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"unhedged", "p95", "p95-nonfatal-unavailable"}, names, "the names of BenchmarkHedgedFailover's sub-benchmarks")
	require.Nil(t, cases[0].Config.Hedge)
	require.Equal(t, 0.95, cases[1].Config.Hedge.DelayQuantile)
	require.Empty(t, cases[1].Config.Hedge.NonFatalCodes, "the documentation's policy leaves NonFatalCodes to its default")
	require.Equal(t, []codes.Code{codes.Unavailable}, cases[2].Config.Hedge.NonFatalCodes)
}

// TestRunFailover runs every case in short: every read is accounted for once; the kill broke
// at least one call; no read failed otherwise than by Unavailable or its deadline; unhedged,
// no hedge is sent and gRPC's retry fails the broken calls over to another backend, but for
// those its retry throttle may refuse.
func TestRunFailover(t *testing.T) {
	for _, c := range FailoverCases(DefaultFailover().Short()) {
		t.Run(c.Name, func(t *testing.T) {
			cfg := c.Config
			res, err := RunFailover(cfg)
			require.NoError(t, err)
			require.Equal(t, cfg.Calls, res.Calls)
			require.Equal(t, cfg.Calls, res.OK+res.Unavailable+res.DeadlineExceeded+res.Failed, "every read is delivered once")
			require.Zero(t, res.Failed)
			require.Positive(t, res.Broken, "the backend is killed while it serves a call")
			require.LessOrEqual(t, res.HedgesWon, res.Hedges)
			if cfg.Hedge == nil {
				require.Zero(t, res.Hedges)
				// gRPC's retry fails the broken calls over, as long as its throttle lets it: a
				// loaded machine can keep more calls on the killed backend than the throttle's
				// tokens retry, and those fail; no other read does.
				require.LessOrEqual(t, int64(res.Unavailable), res.Broken, "only calls the kill broke fail, when gRPC's retry throttle refuses them")
			}
		})
	}
}

// TestServerKill checks Kill: a call the server is serving fails with Unavailable at once,
// the server refuses new connections, and Stop after Kill returns.
func TestServerKill(t *testing.T) {
	started := make(chan struct{})
	s, err := StartServer(func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	require.NoError(t, err)
	cc, err := grpc.NewClient(s.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	defer cc.Close()
	stub := testpb.NewTestServiceClient(cc)
	failed := make(chan error, 1)
	go func() {
		_, err := stub.Echo(context.Background(), &testpb.EchoRequest{Message: "killed"})
		failed <- err
	}()
	<-started
	require.EqualValues(t, 1, s.Serving())
	require.NoError(t, s.Kill())
	require.Equal(t, codes.Unavailable, status.Code(<-failed))
	_, err = stub.Echo(context.Background(), &testpb.EchoRequest{Message: "after"})
	require.Equal(t, codes.Unavailable, status.Code(err), "the listener is closed")
	require.NoError(t, s.Stop())
	require.EqualValues(t, 1, s.Calls())
}
