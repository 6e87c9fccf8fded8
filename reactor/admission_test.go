package reactor_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/codec"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestCallNeverBlocks(t *testing.T) {
	srv := testserver.Start(t)
	const workers, batch, maxOutstanding = 2, 2, 6
	r := newReactor(t, srv, longTimeouts(reactor.Config{Workers: workers, BatchSize: batch, MaxOutstanding: maxOutstanding}))
	g := newGate(t, srv)
	h := newHost(t, r)

	// Every lane busy with a held call, one more queued: one slot short of MaxOutstanding.
	var done int
	count := func(*testpb.EchoResponse) { done++ }
	for i := range workers * batch {
		reactor.Call(r, echo, held(fmt.Sprint("busy", i)), nil).Then(count)
	}
	g.waitEntered(t, workers*batch)
	reactor.Call(r, echo, held("queued"), nil).Then(count)
	waitGauges(t, r, workers*batch, 1)
	require.Equal(t, maxOutstanding-1, r.Stats().Pending)

	// The last admitted call and one over the limit, from another goroutine so that a Call
	// that blocks fails the test instead of hanging it. Each Call takes microseconds; 1 s
	// covers -race on two busy cores many times over.
	type result struct {
		last, over *calls.Promise[*testpb.EchoResponse]
	}
	returned := make(chan result, 1)
	go func() {
		req := &testpb.EchoRequest{Message: "original", Block: true}
		last := reactor.Call(r, echo, req, nil)
		req.Message, req.Block = "mutated", false // after Call: must change nothing sent
		over := reactor.Call(r, echo, &testpb.EchoRequest{Message: "over"}, nil)
		returned <- result{last, over}
	}()
	var res result
	select {
	case res = <-returned:
	case <-time.After(time.Second):
		t.Fatal("Call blocked with every lane busy and MaxOutstanding nearly reached")
	}
	require.NoError(t, res.last.Err())
	require.Equal(t, calls.Pending, res.last.State())
	require.ErrorIs(t, res.over.Err(), calls.ErrOverloaded)

	var got string
	res.last.Then(func(resp *testpb.EchoResponse) { got = resp.GetMessage() }).Then(count)
	g.releaseAll()
	h.waitFor(func() bool { return done == maxOutstanding })
	require.Equal(t, "original", got, "the request was not snapshotted at Call")
	require.Contains(t, g.seenMessages(), "original")
	require.NotContains(t, g.seenMessages(), "mutated")
}

func TestOverloadCountsUndeliveredCompletions(t *testing.T) {
	srv := testserver.Start(t)
	const maxOutstanding = 4
	r := newReactor(t, srv, longTimeouts(reactor.Config{Workers: 1, BatchSize: 2, MaxOutstanding: maxOutstanding}))
	g := newGate(t, srv)
	h := newHost(t, r)

	var succeeded int
	for i := range maxOutstanding {
		reactor.Call(r, echo, held(fmt.Sprint(i)), nil).Then(func(*testpb.EchoResponse) { succeeded++ })
	}
	g.waitEntered(t, 2)
	waitGauges(t, r, 2, 2)

	requireOverloaded := func(what string) {
		t.Helper()
		var cbErr error
		p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil).OnError(func(err error) { cbErr = err })
		require.ErrorIs(t, p.Err(), calls.ErrOverloaded, what)
		require.Equal(t, codes.ResourceExhausted, status.Code(p.Err()), what)
		require.Equal(t, calls.Failed, p.State(), what)
		require.Nil(t, cbErr, "callback ran inside Call")
		require.Equal(t, maxOutstanding, r.Stats().Pending, "%s: a rejected call holds no slot", what)
	}
	requireOverloaded("calls queued and in flight")

	// The held calls complete, but the host does not tick: they still count.
	g.releaseAll()
	waitGauges(t, r, 0, 0)
	requireOverloaded("completions waiting for Tick")
	require.Zero(t, succeeded)

	h.Tick(time.Second)
	require.Equal(t, maxOutstanding, succeeded)
	require.Zero(t, r.Stats().Pending)
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Then(func(*testpb.EchoResponse) { succeeded++ })
	require.NoError(t, p.Err(), "admission resumes once Tick delivered")
	h.waitFor(func() bool { return succeeded == maxOutstanding+1 })
	s := r.Stats()
	require.EqualValues(t, 2, s.Overloaded)
	require.EqualValues(t, 2, s.Failed[codes.ResourceExhausted])
	require.EqualValues(t, maxOutstanding+1, s.Succeeded)
}

func TestStatsInvariantDuringBusyRun(t *testing.T) {
	srv := testserver.Start(t)
	const maxOutstanding = 32
	r := newReactor(t, srv, reactor.Config{Workers: 2, BatchSize: 4, MaxOutstanding: maxOutstanding})
	h := newHost(t, r)

	// A mix of outcomes: success, server error, local timeout, invalid input; overload comes
	// from the burst itself.
	kinds := []struct {
		req  *testpb.EchoRequest
		opts *calls.Options
	}{
		{&testpb.EchoRequest{Message: "ok"}, nil},
		{&testpb.EchoRequest{FailCode: int32(codes.NotFound)}, nil},
		{&testpb.EchoRequest{DelayMs: 200}, &calls.Options{Timeout: 5 * time.Millisecond}},
		{nil, nil},
		{&testpb.EchoRequest{}, &calls.Options{Timeout: -time.Second}},
	}
	const submitters, perSubmitter = 4, 200
	const total = submitters * perSubmitter

	stop := make(chan struct{})
	var samples atomic.Int64
	violation := make(chan string, 1)
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			s := r.Stats()
			var failed uint64
			for _, n := range s.Failed {
				failed += n
			}
			switch {
			case s.Submitted != s.Succeeded+failed+uint64(s.Pending):
				violation <- fmt.Sprintf("Submitted %d != Succeeded %d + Failed %d + Pending %d", s.Submitted, s.Succeeded, failed, s.Pending)
				return
			case s.TimedOut+s.Overloaded+s.Cancelled+s.Closed > failed:
				violation <- fmt.Sprintf("failure reasons %d exceed Failed %d", s.TimedOut+s.Overloaded+s.Cancelled+s.Closed, failed)
				return
			case s.Pending < 0 || s.Pending > maxOutstanding:
				violation <- fmt.Sprintf("Pending %d outside [0, %d]", s.Pending, maxOutstanding)
				return
			}
			samples.Add(1)
			runtime.Gosched()
		}
	}()

	var delivered int // callbacks run on this goroutine only
	var wg sync.WaitGroup
	for s := range submitters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perSubmitter {
				k := kinds[(s+i)%len(kinds)]
				reactor.Call(r, echo, k.req, k.opts).Always(func() { delivered++ })
			}
		}()
	}
	h.waitFor(func() bool { return delivered == total })
	wg.Wait()
	close(stop)
	sampler.Wait()
	select {
	case v := <-violation:
		t.Fatal(v)
	default:
	}
	require.Positive(t, samples.Load())

	s := r.Stats()
	var failed uint64
	for _, n := range s.Failed {
		failed += n
	}
	require.EqualValues(t, total, s.Submitted)
	require.Zero(t, s.Pending)
	require.EqualValues(t, total, s.Succeeded+failed)
	t.Logf("%d samples; succeeded %d, failed %v, timed out %d, overloaded %d", samples.Load(), s.Succeeded, s.Failed, s.TimedOut, s.Overloaded)
}

// panicConn delegates to a real connection, except that its Invoke panics for requests whose
// Message is "panic".
type panicConn struct{ grpc.ClientConnInterface }

func (c panicConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if f, ok := args.(*codec.Frame); ok {
		var req testpb.EchoRequest
		if proto.Unmarshal(f.Bytes, &req) == nil && req.GetMessage() == "panic" {
			panic("test invoker panic")
		}
	}
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

func TestInvokerPanicFailsOnlyItsCall(t *testing.T) {
	srv := testserver.Start(t)
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cc.Close()) }) // after the reactor's Close
	var logs syncBuffer
	// One lane: if the panic killed it, every later call would hang.
	r := newReactor(t, srv, reactor.Config{
		Conn: panicConn{cc}, Workers: 1, BatchSize: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	h := newHost(t, r)

	msgs := []string{"before", "panic", "after1", "after2"}
	results := map[string]error{}
	submit := func(m string) {
		reactor.Call(r, echo, &testpb.EchoRequest{Message: m}, nil).
			Then(func(resp *testpb.EchoResponse) {
				require.Equal(t, m, resp.GetMessage())
				results[m] = nil
			}).
			OnError(func(err error) { results[m] = err })
	}
	for _, m := range msgs {
		submit(m)
	}
	h.waitFor(func() bool { return len(results) == len(msgs) })
	require.Equal(t, codes.Internal, status.Code(results["panic"]))
	require.Contains(t, results["panic"].Error(), "invoker panicked")
	for _, m := range []string{"before", "after1", "after2"} {
		require.NoError(t, results[m], m)
	}
	require.Contains(t, logs.String(), "invoker panicked")

	submit("later")
	h.waitFor(func() bool { _, ok := results["later"]; return ok })
	require.NoError(t, results["later"], "the reactor keeps serving")
	require.EqualValues(t, 1, r.Stats().Failed[codes.Internal])
}

// TestRequestBufferOutlivesFailedCall is a regression test, effective under -race, for a data
// race: a call that times out (or is cancelled) can return from ClientConn.Invoke while gRPC's
// writer goroutine still reads the request's bytes, so its pooled encode buffer must not be
// handed to the next Call's encoder. Many short timeouts against a blocked handler, with
// 16 KiB requests, 256 in flight, make early returns common; before the fix -race reported
// the race in every run.
func TestRequestBufferOutlivesFailedCall(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Workers: 4, BatchSize: 64})
	h := newHost(t, r)
	const n, batch = 1024, 256
	done := 0
	for i := range n {
		req := &testpb.EchoRequest{Block: true, Payload: bytes.Repeat([]byte{byte(i)}, 16<<10)}
		reactor.Call(r, echo, req, &calls.Options{Timeout: time.Duration(1+i%5) * time.Millisecond}).
			Always(func() { done++ })
		if i%batch == batch-1 {
			h.waitFor(func() bool { return done == i+1 })
		}
	}
	require.EqualValues(t, n, r.Stats().TimedOut)
}
