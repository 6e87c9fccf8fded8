package policybench

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
)

func TestHedgeCases(t *testing.T) {
	var names []string
	for _, c := range HedgeCases(DefaultHedge()) {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"unhedged", "delay-5ms", "p95"}, names, "the names of BenchmarkHedgedReads's sub-benchmarks")
}

// TestRunHedge runs every case in short: every call succeeds and every backend gets a share;
// unhedged, every call is one transport call and the slow backend's delayed calls, more than
// 1% of all, put p99 at the delay at least; hedged, the slow calls outlast the delay, so
// hedges are sent, and no more win than are sent.
func TestRunHedge(t *testing.T) {
	for _, c := range HedgeCases(DefaultHedge().Short()) {
		t.Run(c.Name, func(t *testing.T) {
			cfg := c.Config
			res, err := RunHedge(cfg)
			require.NoError(t, err)
			require.Equal(t, cfg.Calls, res.Calls)
			require.Equal(t, cfg.Calls, res.OK)
			require.Zero(t, res.Failed)
			require.Len(t, res.BackendCalls, cfg.Backends)
			for i, n := range res.BackendCalls {
				require.Positive(t, n, "backend %d", i)
			}
			require.LessOrEqual(t, res.P50, res.P99)
			if cfg.Hedge == nil {
				require.Zero(t, res.ExtraLoad(), "an unhedged call is one transport call")
				require.Zero(t, res.Hedges)
				require.Zero(t, res.HedgesWon)
				require.GreaterOrEqual(t, res.P99, cfg.SlowDelay)
				return
			}
			require.Positive(t, res.Hedges, "the slow calls outlast the delay")
			require.LessOrEqual(t, res.HedgesWon, res.Hedges)
			require.GreaterOrEqual(t, res.ExtraLoad(), 0.0)
		})
	}
}

// TestHedgeBackendsDelayEveryNth checks the slow backend's share: of the calls it receives,
// every SlowEvery-th waits SlowDelay, here longer than the test, so that the call fails at
// its own deadline instead; the others answer at once, as the other backends do.
func TestHedgeBackendsDelayEveryNth(t *testing.T) {
	cfg := DefaultHedge()
	cfg.SlowEvery, cfg.SlowDelay = 3, time.Hour
	be, err := StartHedgeBackends(cfg)
	require.NoError(t, err)
	defer func() { require.NoError(t, be.Stop()) }()
	require.Len(t, be.Addrs(), cfg.Backends)
	stubs := make([]testpb.TestServiceClient, cfg.Backends)
	for i, addr := range be.Addrs() {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer cc.Close()
		stubs[i] = testpb.NewTestServiceClient(cc)
	}
	call := func(ctx context.Context, i int) error {
		_, err := stubs[i].Echo(ctx, &testpb.EchoRequest{Message: "hedge"})
		return err
	}
	for n := 1; n <= 2*cfg.SlowEvery; n++ {
		if n%cfg.SlowEvery != 0 {
			require.NoError(t, call(context.Background(), 0), "call %d to the slow backend", n)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		require.Equal(t, codes.DeadlineExceeded, status.Code(call(ctx, 0)), "call %d to the slow backend is delayed", n)
		cancel()
	}
	for i := 1; i < cfg.Backends; i++ {
		for range cfg.SlowEvery {
			require.NoError(t, call(context.Background(), i), "backend %d", i)
		}
	}
	want := make([]int64, cfg.Backends)
	for i := range want {
		want[i] = int64(cfg.SlowEvery)
	}
	want[0] *= 2
	require.Equal(t, want, be.Calls())
}
