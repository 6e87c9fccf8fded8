package policybench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/threadcpu"
	"github.com/trixnew/prpc/reactor"
)

// watch is the test service's server stream, which the stream scenario receives.
var watch = calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse]("/prpctest.TestService/Watch")

// StreamClient is how the stream scenario's host receives a stream's messages.
type StreamClient string

// The stream scenario's clients.
const (
	// StreamPRPC is reactor.Watch, its messages delivered by Tick.
	StreamPRPC StreamClient = "prpc-watch"
	// StreamPRPCBatch is reactor.Watch with a batch handler (StreamHandler.OnMessages): Tick
	// hands each run of messages that arrived together to one callback.
	StreamPRPCBatch StreamClient = "prpc-watch-batch"
	// StreamHand is what a Go developer writes without prpc: the generated stub's Watch, a
	// goroutine calling Recv and sending each message on a channel, which each tick drains.
	StreamHand StreamClient = "handwritten"
	// StreamHandBudget is StreamHand whose drain reads the clock after each message and stops
	// once the tick's budget is spent, as Tick does.
	StreamHandBudget StreamClient = "handwritten-budget"
)

// StreamConfig is one run of the stream scenario: a server sends Messages messages on one
// stream as fast as flow control lets it, and the host, locked to its OS thread, ticks every
// TickEvery, each tick taking the messages that have arrived through Client, with room for
// Window messages waiting (MaxWaiting, or the channel's capacity).
type StreamConfig struct {
	Client    StreamClient
	Messages  int
	Window    int
	TickEvery time.Duration
	Budget    time.Duration // each tick's budget: Tick's, and StreamHandBudget's
	// Addr is the address of the server to receive from, a Server (StartServer) that may run
	// in another process, such as one pinned to another CPU than the host's; empty, RunStream
	// starts a Server in this process for the run and stops it after.
	Addr string
}

// DefaultStream is the scenario's shape: 200,000 messages, a window of 1,024, a tick every
// millisecond with a budget of 2 ms.
func DefaultStream() StreamConfig {
	return StreamConfig{Client: StreamPRPC, Messages: 200_000, Window: 1024, TickEvery: time.Millisecond, Budget: 2 * time.Millisecond}
}

// Short returns c with few enough messages for the tests.
func (c StreamConfig) Short() StreamConfig {
	c.Messages = 2000
	return c
}

// StreamCase is one case of the stream scenario: its name and configuration.
type StreamCase struct {
	Name   string
	Config StreamConfig
}

// StreamCases returns the scenario's cases over base: each client in turn.
func StreamCases(base StreamConfig) []StreamCase {
	var out []StreamCase
	for _, c := range []StreamClient{StreamPRPC, StreamPRPCBatch, StreamHand, StreamHandBudget} {
		cfg := base
		cfg.Client = c
		out = append(out, StreamCase{Name: string(c), Config: cfg})
	}
	return out
}

// StreamResult is what one run of the stream scenario measured: the messages received, the
// wall time from opening the stream to its end, the host's thread CPU time inside its ticks
// (zero if the OS does not report it), and the ticks.
type StreamResult struct {
	Messages int
	Elapsed  time.Duration
	HostCPU  time.Duration
	Ticks    int
}

// MessagesPerSecond is the messages received per second of wall time.
func (r StreamResult) MessagesPerSecond() float64 {
	return float64(r.Messages) / r.Elapsed.Seconds()
}

// HostNsPerMessage is the host's thread CPU time inside its ticks per message: what
// delivering a message costs the game loop.
func (r StreamResult) HostNsPerMessage() float64 {
	return float64(r.HostCPU.Nanoseconds()) / float64(r.Messages)
}

// RunStream runs the stream scenario once: it starts a server unless cfg.Addr names one,
// connects to it, receives a stream of a thousand messages to warm up, then the stream of
// cfg.Messages, measured.
func RunStream(cfg StreamConfig) (StreamResult, error) {
	addr := cfg.Addr
	if addr == "" {
		srv, err := StartServer(func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
			return &testpb.EchoResponse{}, nil
		})
		if err != nil {
			return StreamResult{}, err
		}
		defer srv.Stop()
		addr = srv.Addr()
	}
	var open func(n int) (tick func() (done bool, err error))
	switch cfg.Client {
	case StreamPRPC, StreamPRPCBatch:
		r, err := reactor.New(reactor.Config{Target: addr, Credentials: reactor.Insecure()})
		if err != nil {
			return StreamResult{}, err
		}
		defer r.Close(context.Background())
		open = func(n int) func() (bool, error) { return watchTicks(r, cfg, n) }
	case StreamHand, StreamHandBudget:
		cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return StreamResult{}, err
		}
		defer cc.Close()
		client := testpb.NewTestServiceClient(cc)
		open = func(n int) func() (bool, error) { return channelTicks(client, cfg, n) }
	default:
		return StreamResult{}, fmt.Errorf("policybench: unknown stream client %q", cfg.Client)
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if _, err := tickStream(open(1000), cfg.TickEvery); err != nil {
		return StreamResult{}, fmt.Errorf("warm-up: %w", err)
	}
	runtime.GC()
	start := time.Now()
	res, err := tickStream(open(cfg.Messages), cfg.TickEvery)
	res.Elapsed, res.Messages = time.Since(start), cfg.Messages
	return res, err
}

// tickStream calls tick every tickEvery until it reports the stream's end, and returns the
// thread CPU time spent inside the ticks and their number.
func tickStream(tick func() (bool, error), tickEvery time.Duration) (StreamResult, error) {
	var res StreamResult
	known := true
	for {
		time.Sleep(tickEvery) // the game loop's pace
		c0, ok0 := threadcpu.Now()
		done, err := tick()
		c1, ok1 := threadcpu.Now()
		res.HostCPU += c1 - c0
		known = known && ok0 && ok1
		res.Ticks++
		if done || err != nil {
			if !known {
				res.HostCPU = 0
			}
			return res, err
		}
	}
}

// watchTicks opens a stream of n messages through reactor.Watch, with a batch handler for
// StreamPRPCBatch, and returns the tick that delivers them: Tick(cfg.Budget).
func watchTicks(r *reactor.Reactor, cfg StreamConfig, n int) func() (bool, error) {
	got, done := 0, false
	var end error
	h := calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{
		OnMessage: func(*testpb.EchoResponse) { got++ },
		OnEnd:     func(err error) { end, done = err, true },
	}
	if cfg.Client == StreamPRPCBatch {
		h.OnMessage, h.OnMessages = nil, func(msgs []*testpb.EchoResponse) { got += len(msgs) }
	}
	reactor.Watch(r, watch, &testpb.WatchRequest{Count: int64(n), Message: "m"}, &calls.StreamOptions{MaxWaiting: cfg.Window}, h)
	return func() (bool, error) {
		r.Tick(cfg.Budget)
		if done && end == nil && got != n {
			end = fmt.Errorf("policybench: %d of %d messages", got, n)
		}
		return done, end
	}
}

// RecvInto is the hand-written alternative to reactor.Watch: it opens a Watch stream of n
// messages through the generated stub and starts a goroutine that calls Recv and sends each
// message on a channel of window messages, which it closes at the stream's end, then sends
// the end (nil for OK) on the second channel.
func RecvInto(client testpb.TestServiceClient, n, window int) (<-chan *testpb.EchoResponse, <-chan error) {
	ch := make(chan *testpb.EchoResponse, window)
	end := make(chan error, 1)
	go func() {
		defer close(ch)
		stream, err := client.Watch(context.Background(), &testpb.WatchRequest{Count: int64(n), Message: "m"})
		for err == nil {
			var m *testpb.EchoResponse
			if m, err = stream.Recv(); err == nil {
				ch <- m
			}
		}
		if errors.Is(err, io.EOF) {
			err = nil
		}
		end <- err
	}()
	return ch, end
}

// channelTicks opens a stream of n messages through the generated stub on a goroutine that
// calls Recv into a channel of cfg.Window messages, and returns the tick that drains it: all
// of it, or, for StreamHandBudget, until cfg.Budget is spent.
func channelTicks(client testpb.TestServiceClient, cfg StreamConfig, n int) func() (bool, error) {
	ch, end := RecvInto(client, n, cfg.Window)
	got, budgeted := 0, cfg.Client == StreamHandBudget
	return func() (bool, error) {
		start := time.Now()
		for {
			select {
			case _, ok := <-ch:
				if !ok {
					err := <-end
					if err == nil && got != n {
						err = fmt.Errorf("policybench: %d of %d messages", got, n)
					}
					return true, err
				}
				got++
				if budgeted && time.Since(start) >= cfg.Budget {
					return false, nil
				}
			default:
				return false, nil
			}
		}
	}
}
