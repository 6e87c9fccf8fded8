package benchmarks

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/server"
	"github.com/trixnew/prpc/reactor"
)

// startDataService serves the data-service example on an ephemeral loopback port, in this
// process, with one player saved, until the benchmark ends. It returns the address and the
// saved player's XUID.
func startDataService(b *testing.B) (addr, xuid string) {
	b.Helper()
	srv, err := server.Start(context.Background(), server.Options{Addr: "127.0.0.1:0"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	defer cc.Close()
	xuid = "2535400000000001"
	_, err = networkpb.NewDataServiceClient(cc).SavePlayer(context.Background(), &networkpb.SavePlayerRequest{
		Player: &networkpb.Player{Xuid: xuid, Name: "Steve", Level: 12, Coins: 3400},
	})
	if err != nil {
		b.Fatal(err)
	}
	return srv.Addr(), xuid
}

// roundTripTimeout is the timeout of every call in BenchmarkRoundTrip, prpc's default.
const roundTripTimeout = reactor.DefaultTimeout

// BenchmarkRoundTrip measures one GetPlayer call at a time on loopback against the
// data-service example (in this process, so its CPU time counts too):
//
//   - prpc: reactor.Call, then the loop waits on Ready and runs Tick until the callback has
//     run — submit to callback, as a game loop sees it;
//   - prpc-metadata: the same, with GetPlayer's policy asking for response metadata
//     (MethodPolicy.ResponseMetadata): its B/op and allocs/op against prpc's are what
//     capturing the header and trailer costs;
//   - plain-invoke: the generated stub's GetPlayer on a grpc.ClientConn, with a context
//     timeout per call as prpc sets one.
//
// Besides the mean (ns/op) it reports the median and 99th percentile of the calls
// (p50-µs, p99-µs), over the last latencyRing calls.
func BenchmarkRoundTrip(b *testing.B) {
	addr, xuid := startDataService(b)
	req := &networkpb.GetPlayerRequest{Xuid: xuid}

	prpcRoundTrip := func(policies []reactor.MethodPolicy) func(b *testing.B) {
		return func(b *testing.B) {
			r, err := reactor.New(reactor.Config{Target: addr, Credentials: reactor.Insecure(), DefaultTimeout: roundTripTimeout, Policies: policies})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := r.Close(context.Background()); err != nil {
					b.Error(err)
				}
			}()
			var (
				got    *networkpb.GetPlayerResponse
				gotErr error
			)
			then := func(resp *networkpb.GetPlayerResponse) { got = resp }
			fail := func(err error) { gotErr = err }
			roundTrips(b, xuid, func() (*networkpb.GetPlayerResponse, error) {
				got, gotErr = nil, nil
				p := reactor.Call(r, getPlayer, req, nil).Then(then).OnError(fail)
				for p.State() == calls.Pending {
					<-r.Ready()
					r.Tick(2 * time.Millisecond)
				}
				return got, gotErr
			})
		}
	}
	b.Run("prpc", prpcRoundTrip(nil))
	b.Run("prpc-metadata", prpcRoundTrip([]reactor.MethodPolicy{{Method: getPlayer, ResponseMetadata: true}}))

	b.Run("plain-invoke", func(b *testing.B) {
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		stub := networkpb.NewDataServiceClient(cc)
		roundTrips(b, xuid, func() (*networkpb.GetPlayerResponse, error) {
			ctx, cancel := context.WithTimeout(context.Background(), roundTripTimeout)
			defer cancel()
			return stub.GetPlayer(ctx, req)
		})
	})
}

// roundTrips runs call once per benchmark iteration, one call at a time, checks that each
// found player xuid, and reports the latencies.
func roundTrips(b *testing.B, xuid string, call func() (*networkpb.GetPlayerResponse, error)) {
	var lat latencies
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		resp, err := call()
		if err != nil {
			b.Fatal(err)
		}
		if !resp.GetFound() {
			b.Fatalf("player %s not found", xuid)
		}
		lat.add(time.Since(start))
	}
	lat.report(b)
}

// latencyRing is the number of most recent calls whose latencies BenchmarkRoundTrip keeps.
const latencyRing = 1 << 14

// latencies is a ring of call latencies, allocated once, so that recording one allocates
// nothing inside the measured loop.
type latencies struct {
	ring [latencyRing]time.Duration
	n    int // calls recorded
}

func (l *latencies) add(d time.Duration) {
	l.ring[l.n%latencyRing] = d
	l.n++
}

// report adds the median and 99th percentile (nearest rank), in µs, to b's results.
func (l *latencies) report(b *testing.B) {
	s := append([]time.Duration(nil), l.ring[:min(l.n, latencyRing)]...)
	if len(s) == 0 {
		return
	}
	slices.Sort(s)
	rank := func(q float64) time.Duration { return s[max(int(math.Ceil(q*float64(len(s))))-1, 0)] }
	b.ReportMetric(float64(rank(0.50))/float64(time.Microsecond), "p50-µs")
	b.ReportMetric(float64(rank(0.99))/float64(time.Microsecond), "p99-µs")
}
