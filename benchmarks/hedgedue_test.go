package benchmarks

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
	"github.com/trixnew/prpc/benchmarks/internal/rank"
	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// hedgeDueDelay is the hedging Delay of BenchmarkHedgeDue: the hedge of each call is due this
// long after its first attempt started.
const hedgeDueDelay = 2 * time.Millisecond

// hedgeDueCalls is the number of calls, and so of hedges, of one run of BenchmarkHedgeDue.
const hedgeDueCalls = 3000

// BenchmarkHedgeDue measures how late a hedge starts after it is due, on the system clock,
// against a loopback backend that holds every first attempt (until it is cancelled, or for a
// second) and answers every hedge at once, so that every call sends one hedge, hedgeDueDelay
// after its first attempt:
//
//   - serial: one call at a time, the next submitted once the last was delivered: what the
//     hand-over from the lane that schedules a hedge to what queues it costs alone;
//   - open-loop: hedgeDueCalls/1000 calls every millisecond, as a game submits them each
//     tick, so that the reactor goroutine has submissions to take in the turns that queue
//     the hedges.
//
// A unary client interceptor notes when each attempt starts on its lane (gRPC calls it first
// in the attempt's Invoke); a hedge's lateness is its start minus its first attempt's, minus
// the delay. It reports the median and 99th percentile of the hedges' lateness (p50-late-µs,
// p99-late-µs), how many hedges were measured (fewer than the calls when a burst of hedges
// outruns the budget's bucket) and how many calls failed. One iteration is one run of
// hedgeDueCalls calls: -benchtime 1x.
func BenchmarkHedgeDue(b *testing.B) {
	for _, open := range []bool{false, true} {
		name := "serial"
		if open {
			name = "open-loop"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				late, failed, err := runHedgeDue(open)
				if err != nil {
					b.Fatal(err)
				}
				slices.Sort(late)
				b.ReportMetric(float64(rank.Percentile(late, 50))/float64(time.Microsecond), "p50-late-µs")
				b.ReportMetric(float64(rank.Percentile(late, 99))/float64(time.Microsecond), "p99-late-µs")
				b.ReportMetric(float64(len(late)), "hedges")
				b.ReportMetric(float64(failed), "failed")
			}
		})
	}
}

// attemptStarts records when each call's attempts started, by the call's call-id metadata and
// the attempt's number of previous attempts.
type attemptStarts struct {
	mu     sync.Mutex
	starts map[string][2]time.Time
}

// interceptor notes the start of each of the first two attempts of a call.
func (a *attemptStarts) interceptor(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	now := time.Now()
	md, _ := metadata.FromOutgoingContext(ctx)
	previous := 0
	if v := md.Get("grpc-previous-rpc-attempts"); len(v) == 1 {
		previous, _ = strconv.Atoi(v[0])
	}
	if id := md.Get("call-id"); len(id) == 1 && previous < 2 {
		a.mu.Lock()
		s := a.starts[id[0]]
		s[previous] = now
		a.starts[id[0]] = s
		a.mu.Unlock()
	}
	return invoker(ctx, method, req, reply, cc, opts...)
}

// late returns the lateness of each hedge that started: its start minus its first attempt's,
// minus the delay.
func (a *attemptStarts) late() []time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	var late []time.Duration
	for _, s := range a.starts {
		if !s[0].IsZero() && !s[1].IsZero() {
			late = append(late, s[1].Sub(s[0])-hedgeDueDelay)
		}
	}
	return late
}

// runHedgeDue runs hedgeDueCalls hedged calls, serially or open-loop, and returns the
// lateness of their hedges and how many calls failed.
func runHedgeDue(open bool) (late []time.Duration, failed int, err error) {
	srv, err := policybench.StartServer(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if md, ok := metadata.FromIncomingContext(ctx); !ok || len(md.Get("grpc-previous-rpc-attempts")) == 0 {
			select { // the first attempt: held until the hedge's answer cancels it
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Second):
			}
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	if err != nil {
		return nil, 0, err
	}
	defer func() { err = errors.Join(err, srv.Stop()) }()
	starts := &attemptStarts{starts: make(map[string][2]time.Time, hedgeDueCalls)}
	r, err := reactor.New(reactor.Config{
		Target: srv.Addr(), Credentials: reactor.Insecure(), Workers: 4, BatchSize: 16, MaxOutstanding: hedgeDueCalls,
		DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(starts.interceptor)},
		Policies: []reactor.MethodPolicy{{Method: hedgeDueEcho, Idempotent: true,
			Hedge: &reactor.HedgePolicy{Delay: hedgeDueDelay, Budget: 4}}}, // every call may hedge
	})
	if err != nil {
		return nil, 0, err
	}
	defer func() { err = errors.Join(err, r.Close(context.Background())) }()
	pending := 0
	submit := func(i int) error {
		pending++
		id := strconv.Itoa(i)
		opts := &calls.Options{Metadata: metadata.Pairs("call-id", id)}
		return reactor.Go(r, hedgeDueEcho, &testpb.EchoRequest{Message: id}, opts, func(_ *testpb.EchoResponse, err error) {
			pending--
			if err != nil {
				failed++
			}
		})
	}
	drain := func() {
		for pending > 0 {
			<-r.Ready()
			r.Tick(time.Second)
		}
	}
	if !open {
		for i := range hedgeDueCalls {
			if err := submit(i); err != nil {
				return nil, 0, err
			}
			drain()
		}
	} else {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		perTick := hedgeDueCalls / 1000
		for i := 0; i < hedgeDueCalls; i += perTick {
			for j := range perTick {
				if err := submit(i + j); err != nil {
					return nil, 0, err
				}
			}
			<-tick.C
			r.Tick(time.Millisecond)
		}
		drain()
	}
	return starts.late(), failed, nil
}

// hedgeDueEcho is the test service's Echo, which BenchmarkHedgeDue hedges.
var hedgeDueEcho = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")
