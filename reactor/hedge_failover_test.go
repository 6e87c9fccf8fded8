package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// Hedging keeps the failover a method's retries gave it, and a hedge that loses is counted
// apart from the backends' failures.

// TestHedgeFailsOverByDefault checks which codes send the next attempt at once when
// NonFatalCodes is left nil: those Config.Retry retries, Unavailable by default, as a
// retried method would fail over; an empty NonFatalCodes makes every code fatal.
func TestHedgeFailsOverByDefault(t *testing.T) {
	cases := []struct {
		name     string
		nonFatal []codes.Code
		retry    []codes.Code // Config.Retry.RetryableCodes; another method is retried then
		first    codes.Code   // the first attempt's code
		want     codes.Code   // the call's
	}{
		{name: "Unavailable by default", first: codes.Unavailable, want: codes.OK},
		{name: "other codes are fatal by default", first: codes.Internal, want: codes.Internal},
		{name: "the codes Retry retries", retry: []codes.Code{codes.ResourceExhausted}, first: codes.ResourceExhausted, want: codes.OK},
		{name: "only those", retry: []codes.Code{codes.ResourceExhausted}, first: codes.Unavailable, want: codes.Unavailable},
		{name: "NonFatalCodes set", nonFatal: []codes.Code{codes.Aborted}, first: codes.Unavailable, want: codes.Unavailable},
		{name: "NonFatalCodes empty: none", nonFatal: []codes.Code{}, first: codes.Unavailable, want: codes.Unavailable},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHedgeBackend()
			cfg := reactor.Config{
				Clock: reactortest.NewManualClock(time.Now()), Workers: 1, BatchSize: 4, MaxTimeout: time.Hour, DefaultTimeout: time.Minute,
				Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: &reactor.HedgePolicy{Delay: time.Hour, NonFatalCodes: tc.nonFatal}}},
			}
			if tc.retry != nil {
				cfg.Retry.RetryableCodes = tc.retry
				cfg.Policies = append(cfg.Policies, reactor.MethodPolicy{Method: mapRead, Idempotent: true})
			}
			r := reactortest.NewReactor(t, h.Backend, cfg)
			o := submitEcho(r, "x", nil)
			require.Equal(t, 0, h.waitEntered(t))
			h.answers[0] <- tc.first
			if tc.want == codes.OK {
				require.Equal(t, 1, h.waitEntered(t), "the next attempt, at once")
				h.answers[1] <- codes.OK
			}
			tickUntilDelivered(t, r, []*outcome{o})
			require.Equal(t, tc.want, status.Code(o.err))
			h.noAttempt(t)
		})
	}
}

// TestHedgeLostIsNoFailure checks that the attempt a hedge beat, which prpc cancels, counts as
// a hedge lost for its method and its backend, and never among the backend's failures.
func TestHedgeLostIsNoFailure(t *testing.T) {
	needLoopback(t, "127.0.0.2")
	srvs := []*testserver.Server{testserver.StartOn(t, "127.0.0.1:0"), testserver.StartOn(t, "127.0.0.2:0")}
	r := newReactor(t, nil, longTimeouts(reactor.Config{
		Targets: []string{srvs[0].Addr(), srvs[1].Addr()},
		Backoff: fastBackoff,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Hedge: &reactor.HedgePolicy{
			// The first attempt is held until cancelled, so the hedge always wins; a budget of a
			// hedge per call, so that the warm-up calls cannot spend it.
			Delay: time.Millisecond, Budget: 1,
		}}},
	}))
	h := newHost(t, r)
	h.warmUp(srvs)
	held := make(chan string, 1)
	for _, s := range srvs {
		addr := s.Addr()
		s.SetHandler(func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
			if req.GetMessage() == "hedged" {
				if md, _ := metadata.FromIncomingContext(ctx); len(md.Get("grpc-previous-rpc-attempts")) == 0 {
					held <- addr
					<-ctx.Done()
					return nil, ctx.Err()
				}
			}
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		})
	}
	// The warm-up's calls may have been hedged too: the test counts from here, once every
	// attempt they lost has ended (each of their hedges, all answered OK, beat one or lost).
	until(t, bound, "the warm-up's attempts ended", func() bool {
		ms := r.Stats().Methods[echo.Path()]
		return r.Stats().InFlight == 0 && ms.HedgesLost == ms.Hedges
	})
	st := r.Stats()
	before, wonBefore, lostBefore := st.Backends, st.Methods[echo.Path()].HedgesWon, st.Methods[echo.Path()].HedgesLost
	hedged := h.submit(echo, echoReq("hedged"), nil)
	h.settle(hedged)
	requireEchoed(t, []*call{hedged})
	loser := recv(t, held, "the first attempt")

	require.Equal(t, wonBefore+1, r.Stats().Methods[echo.Path()].HedgesWon)
	// The lane counts the lost attempt for its backend, then for its method, after the call
	// was delivered: wait for both.
	until(t, bound, "the lost attempt counted", func() bool {
		st := r.Stats()
		lostByBackends := uint64(0)
		for _, b := range st.Backends {
			lostByBackends += b.HedgesLost
		}
		for _, b := range before {
			lostByBackends -= b.HedgesLost
		}
		return st.Methods[echo.Path()].HedgesLost == lostBefore+1 && lostByBackends == 1
	})
	for _, b := range r.Stats().Backends {
		require.Empty(t, b.Failed, "backend %s: a lost hedge counted as a failure", b.Addr)
		var was reactor.BackendStats
		for _, p := range before {
			if p.Addr == b.Addr {
				was = p
			}
		}
		if b.Addr == loser {
			require.Equal(t, was.HedgesLost+1, b.HedgesLost, "backend %s", b.Addr)
			require.Equal(t, was.Calls+1, b.Calls, "backend %s: the lost attempt is a call it carried", b.Addr)
		} else {
			require.Equal(t, was.HedgesLost, b.HedgesLost, "backend %s", b.Addr)
		}
	}
}
