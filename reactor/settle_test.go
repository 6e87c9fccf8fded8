package reactor_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/memconn"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// raceConn answers each call in one of three ways, chosen by the request's message: at once,
// after yielding the processor a few times (so the answer lands near the call's deadline or
// its cancel), or only when the call's context ends. It echoes the message back.
type raceConn struct{}

func (raceConn) Invoke(ctx context.Context, _ string, args, reply any, opts ...grpc.CallOption) error {
	raw, err := memconn.Encode(args, opts)
	if err != nil {
		return err
	}
	var req testpb.EchoRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		return status.Errorf(codes.Internal, "race conn: %v", err)
	}
	switch req.GetMessage()[0] {
	case 'y':
		for range 1 + len(req.GetMessage())%16 {
			runtime.Gosched()
		}
	case 'h':
		<-ctx.Done()
		return status.FromContextError(ctx.Err()).Err()
	}
	reply.(*testpb.EchoResponse).Message = req.GetMessage()
	return nil
}

func (raceConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "race conn: no streams")
}

var raceEcho = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpcrace.Race/Echo")

// TestSettleRaces races the lanes' settlement of completed calls against the reactor's
// settlement of the same calls on deadlines, cancels and Close: thousands of calls whose
// answers arrive at once, around their 1–3 ms deadline, around a cancel, or never. Every call
// must settle exactly once, with its own echo or with ErrTimeout or ErrCancelled; once all are
// delivered no call may be left in flight or queued; and Close must find nothing to cut.
func TestSettleRaces(t *testing.T) {
	tests := []struct {
		name    string
		calls   int
		workers int
		batch   int
	}{
		{"few lanes, long queue", 3000, 1, 2},
		{"many lanes", 3000, 4, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newReactor(t, nil, reactor.Config{
				Conn:           raceConn{},
				Workers:        tt.workers,
				BatchSize:      tt.batch,
				MaxOutstanding: tt.calls,
			})
			h := newHost(t, r)
			rng := rand.New(rand.NewPCG(7, uint64(tt.calls)))
			var cancels []*echoPromise
			for i := range tt.calls {
				msg := fmt.Sprintf("%c%d", "aayh"[rng.IntN(4)], i) // a: at once, y: yields, h: held
				c := h.submit(raceEcho, echoReq(msg), &calls.Options{Timeout: time.Duration(1+rng.IntN(3)) * time.Millisecond})
				switch rng.IntN(8) {
				case 0:
					c.p.Cancel() // at once: the call may not have reached the reactor yet
				case 1:
					cancels = append(cancels, c.p) // after the next Tick
				}
				if i%64 == 0 {
					h.Tick(time.Millisecond)
					for _, p := range cancels {
						p.Cancel()
					}
					cancels = cancels[:0]
				}
			}
			h.settle() // each exactly once
			for _, c := range h.calls {
				if c.err == nil {
					require.Equal(t, c.id, c.resp.GetMessage(), "call %d got another call's echo", c.seq)
				} else if !errors.Is(c.err, calls.ErrTimeout) && !errors.Is(c.err, calls.ErrCancelled) && !errors.Is(c.err, calls.ErrShed) {
					t.Fatalf("call %d (%s): %v", c.seq, c.id, c.err)
				}
			}
			require.Eventually(t, func() bool {
				st := r.Stats()
				return st.InFlight == 0 && st.Queued == 0
			}, bound, poll, "every lane has let go of its call")
			require.NoError(t, r.Close(closeCtx(t, bound)), "nothing left to cut off")
			require.Zero(t, r.Tick(0).Delivered, "nothing delivered twice")
		})
	}
}

// TestExactlyOnceUnderRaces races responses against local deadlines and cancels: handler
// delays are spread around the timeout, and a quarter of the calls are also cancelled at a
// random moment. Whatever wins, each call settles once.
func TestExactlyOnceUnderRaces(t *testing.T) {
	srv := testserver.Start(t)
	const n, timeout = 256, 100 * time.Millisecond
	r := newReactor(t, srv, reactor.Config{Workers: 4, BatchSize: 64}) // every call in flight at once
	h := newHost(t, r)
	var warm bool // connect first, so that dialling does not decide the first outcomes
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { warm = true })
	h.waitFor(func() bool { return warm })

	var cancels sync.WaitGroup
	cs := make([]*call, n)
	for i := range n {
		req := &testpb.EchoRequest{DelayMs: int64(rand.IntN(201))} // 0–200 ms
		c := h.submit(echo, req, &calls.Options{Timeout: timeout})
		cs[i] = c
		if i%4 == 0 {
			cancels.Add(1)
			time.AfterFunc(time.Duration(rand.IntN(150))*time.Millisecond, func() {
				defer cancels.Done()
				c.p.Cancel()
			})
		}
	}
	h.settle(cs...)
	cancels.Wait()
	// Late cancels, late responses and late timer events must not deliver anything again.
	var flushed bool
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { flushed = true })
	h.waitFor(func() bool { return flushed })
	h.Tick(time.Second)

	outcomes := map[string]int{}
	for _, c := range cs {
		require.True(t, c.settledOnce(), "%v", c)
		if c.thens == 1 {
			require.Equal(t, calls.Succeeded, c.p.State(), "call %d", c.seq)
			outcomes["ok"]++
			continue
		}
		require.Equal(t, calls.Failed, c.p.State(), "call %d", c.seq)
		switch err := c.p.Err(); {
		case errors.Is(err, calls.ErrTimeout):
			outcomes["timeout"]++
		case errors.Is(err, calls.ErrCancelled):
			outcomes["cancelled"]++
		default:
			t.Fatalf("call %d: unexpected error %v", c.seq, err)
		}
	}
	s := r.Stats()
	require.Zero(t, s.Pending)
	require.EqualValues(t, n+2, s.Submitted)
	require.EqualValues(t, outcomes["ok"]+2, s.Succeeded)
	require.EqualValues(t, outcomes["timeout"], s.TimedOut)
	require.EqualValues(t, outcomes["cancelled"], s.Cancelled)
	t.Logf("outcomes: %v", outcomes)
}
