package benchmarks

import (
	"context"
	"runtime"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/benchmarks/internal/policybench"
	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/internal/threadcpu"
	"github.com/trixnew/prpc/reactor"
)

var watch = calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse](testpb.TestService_Watch_FullMethodName)

// streamWindow is how many messages wait for the host at most, in both clients: prpc's
// default MaxWaiting and the hand-written channel's capacity.
const streamWindow = calls.DefaultMaxWaiting

// streamWarmUp is how many messages each client receives, on a stream of their own, before
// the measured one.
const streamWarmUp = 1000

// BenchmarkStreamDelivery measures what a server stream's messages cost the host goroutine:
// a loopback grpc-go server in this process (internal/testserver's TestService.Watch) sends
// b.N messages as fast as flow control lets it, and the host receives each one on its own
// goroutine, locked to its OS thread, waiting between wake-ups as a game loop waits between
// ticks:
//
//   - prpc-watch: reactor.Watch with an OnMessage that counts the message; the host waits
//     for Ready and runs Tick(2ms), until OnEnd;
//   - prpc-watch-batch: the same with an OnMessages that counts each run's messages;
//   - handwritten: what a Go developer writes without prpc: the generated stub's Watch, a
//     goroutine calling Recv and sending each message on a channel of streamWindow
//     messages, which the host drains each time it wakes: it waits for one message, then
//     takes those already there.
//
// ns/op is the wall time per message, from opening the stream to its end; host-ns/msg is the
// host goroutine's thread CPU time per message (where the OS reports it), what a game loop
// pays; msgs/s the throughput; wake-ups/msg how often the host woke (a Tick, or a wait on
// the channel that returned), per message. B/msg and allocs/msg are the process's allocations per message,
// the server's included.
func BenchmarkStreamDelivery(b *testing.B) {
	srv := testserver.Start(b)
	for _, batched := range []bool{false, true} {
		name := "prpc-watch"
		if batched {
			name = "prpc-watch-batch"
		}
		b.Run(name, func(b *testing.B) {
			r, err := reactor.New(reactor.Config{Target: srv.Addr(), Credentials: reactor.Insecure()})
			if err != nil {
				b.Fatal(err)
			}
			defer func() {
				if err := r.Close(context.Background()); err != nil {
					b.Error(err)
				}
			}()
			streamBench(b, func(n int) (int, int, error) {
				var got, wakeUps int
				var end error
				done := false
				h := calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{
					OnMessage: func(*testpb.EchoResponse) { got++ },
					OnEnd:     func(err error) { end, done = err, true },
				}
				if batched {
					h.OnMessage, h.OnMessages = nil, func(ms []*testpb.EchoResponse) { got += len(ms) }
				}
				reactor.Watch(r, watch, &testpb.WatchRequest{Count: int64(n), Message: "m"}, nil, h)
				for !done {
					<-r.Ready()
					wakeUps++
					r.Tick(hostBudget)
				}
				return got, wakeUps, end
			})
		})
	}
	b.Run("handwritten", func(b *testing.B) {
		cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		client := testpb.NewTestServiceClient(cc)
		streamBench(b, func(n int) (int, int, error) {
			ch, end := policybench.RecvInto(client, n, streamWindow)
			got, wakeUps := 0, 0
			for m := range ch { // wait for the next message, then take those already there
				_ = m
				got++
				wakeUps++
				for drained := false; !drained; {
					select {
					case m, ok := <-ch:
						if !ok {
							return got, wakeUps, <-end
						}
						_ = m
						got++
					default:
						drained = true
					}
				}
			}
			return got, wakeUps, <-end
		})
	})
}

// streamBench runs one stream of streamWarmUp messages through receive, then one of b.N
// messages, measured, and reports its figures. receive opens a stream of n messages on the
// calling goroutine, receives them all and returns how many it received, how many times the
// host woke to take them, and the stream's end.
func streamBench(b *testing.B, receive func(n int) (int, int, error)) {
	if got, _, err := receive(streamWarmUp); err != nil || got != streamWarmUp {
		b.Fatalf("warm-up: %d of %d messages, end %v", got, streamWarmUp, err)
	}
	runtime.GC()
	runtime.LockOSThread() // for threadcpu.Now
	defer runtime.UnlockOSThread()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	c0, ok0 := threadcpu.Now()
	b.ResetTimer()
	start := time.Now()
	got, wakeUps, err := receive(b.N)
	wall := time.Since(start)
	b.StopTimer()
	c1, ok1 := threadcpu.Now()
	runtime.ReadMemStats(&m1)
	if err != nil || got != b.N {
		b.Fatalf("%d of %d messages, end %v", got, b.N, err)
	}
	n := float64(b.N)
	b.ReportMetric(float64(wall.Nanoseconds())/n, "ns/op")
	b.ReportMetric(n/wall.Seconds(), "msgs/s")
	b.ReportMetric(float64(wakeUps)/n, "wake-ups/msg")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/n, "allocs/msg")
	b.ReportMetric(float64(m1.TotalAlloc-m0.TotalAlloc)/n, "B/msg")
	if ok0 && ok1 {
		b.ReportMetric(float64((c1-c0).Nanoseconds())/n, "host-ns/msg")
	}
}

// BenchmarkStreamTickCost measures what delivering a stream's messages costs a game loop that
// ticks at a fixed rate, as a game server does, rather than waking for each batch: the
// policies suite's stream scenario (policybench.RunStream), a server in this process sending
// b.N messages as fast as flow control lets it, and a host locked to its OS thread that
// ticks every millisecond, each tick taking what has arrived, with room for 1,024 messages
// waiting: through reactor.Watch and Tick (prpc-watch), by draining the hand-written
// goroutine's channel (handwritten), or by draining it under the tick's budget, reading the
// clock after each message as Tick does (handwritten-budget). host-ns/msg is the host's
// thread CPU time inside the ticks alone per message, the delivery's cost without the cost of
// sleeping and waking; ticks/op is ticks per message.
func BenchmarkStreamTickCost(b *testing.B) {
	for _, c := range policybench.StreamCases(policybench.DefaultStream()) {
		b.Run(c.Name, func(b *testing.B) {
			cfg := c.Config
			cfg.Messages = b.N
			res, err := policybench.RunStream(cfg)
			if err != nil {
				b.Fatal(err)
			}
			n := float64(b.N)
			b.ReportMetric(float64(res.Elapsed.Nanoseconds())/n, "ns/op")
			b.ReportMetric(res.MessagesPerSecond(), "msgs/s")
			b.ReportMetric(float64(res.Ticks)/n, "ticks/op")
			if res.HostCPU > 0 {
				b.ReportMetric(res.HostNsPerMessage(), "host-ns/msg")
			}
		})
	}
}
