package reactor_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// mapRead is a method whose request has a map field (an EchoResponse's metadata), whose
// encoding Go's map order would otherwise change from one call to the next.
var mapRead = calls.MustMethod[*testpb.EchoResponse, *testpb.EchoResponse]("/prpctest.Maps/Read")

// gatedBackend serves echo and mapRead, holding every call until release is closed or the
// call's context ends, and reports each call as it enters (entered) and each context that
// ended (ended, with its error).
type gatedBackend struct {
	*reactortest.Backend
	entered chan string
	ended   chan error
	release chan struct{}
	once    sync.Once
	fail    codes.Code // OK: respond; otherwise fail with this code
}

func newGatedBackend(fail codes.Code) *gatedBackend {
	g := &gatedBackend{Backend: reactortest.NewBackend(), entered: make(chan string, 1024), ended: make(chan error, 1024),
		release: make(chan struct{}), fail: fail}
	reactortest.Handle(g.Backend, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if err := g.hold(ctx, req.GetMessage()); err != nil {
			return nil, err
		}
		if md, ok := metadata.FromIncomingContext(ctx); ok && len(md.Get("x-player")) > 0 {
			_ = grpc.SetHeader(ctx, metadata.Pairs("x-served", md.Get("x-player")[0]))
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	reactortest.Handle(g.Backend, mapRead, func(ctx context.Context, req *testpb.EchoResponse) (*testpb.EchoResponse, error) {
		if err := g.hold(ctx, "map"); err != nil {
			return nil, err
		}
		return &testpb.EchoResponse{Message: fmt.Sprint(len(req.GetMetadata()))}, nil
	})
	return g
}

// hold is each handler's wait.
func (g *gatedBackend) hold(ctx context.Context, what string) error {
	g.entered <- what
	select {
	case <-g.release:
	case <-ctx.Done():
		g.ended <- ctx.Err()
		return ctx.Err()
	}
	if g.fail != codes.OK {
		return status.Error(g.fail, "backend refused")
	}
	return nil
}

func (g *gatedBackend) open() { g.once.Do(func() { close(g.release) }) }

// coalescing returns a reactor on a manual clock (deadlines move only when the test moves
// them) whose echo and mapRead policies coalesce, at most max calls per transport call.
func coalescing(t *testing.T, g *gatedBackend, max int) (*reactor.Reactor, *reactortest.ManualClock) {
	clk := reactortest.NewManualClock(time.Now())
	r := reactortest.NewReactor(t, g.Backend, reactor.Config{
		Clock: clk, Workers: 1, BatchSize: 4, MaxTimeout: time.Hour, DefaultTimeout: time.Minute,
		Policies: []reactor.MethodPolicy{
			{Method: echo, Idempotent: true, Coalesce: true, CoalesceMax: max},
			{Method: mapRead, Idempotent: true, Coalesce: true, CoalesceMax: max},
		},
	})
	t.Cleanup(g.open)
	return r, clk
}

// outcome is what one call's callback got.
type outcome struct {
	resp *testpb.EchoResponse
	err  error
	p    *calls.Promise[*testpb.EchoResponse]
}

// tickUntilDelivered ticks r until every outcome in outs has arrived.
func tickUntilDelivered(t *testing.T, r *reactor.Reactor, outs []*outcome) {
	t.Helper()
	require.Eventually(t, func() bool {
		r.Tick(0)
		for _, o := range outs {
			if o.resp == nil && o.err == nil {
				return false
			}
		}
		return true
	}, 5*time.Second, time.Millisecond)
}

// submitEcho submits an echo call, its outcome recorded in the returned outcome.
func submitEcho(r *reactor.Reactor, msg string, opts *calls.Options) *outcome {
	o := &outcome{}
	o.p = reactor.Call(r, echo, &testpb.EchoRequest{Message: msg}, opts).
		OnSettled(func(resp *testpb.EchoResponse, err error) { o.resp, o.err = resp, err })
	return o
}

// entered waits for n more calls to reach the backend.
func (g *gatedBackend) waitEntered(t *testing.T, n int) {
	t.Helper()
	for range n {
		recv(t, g.entered, "a call reaching the backend")
	}
}

// waitCoalesced waits until n calls of method have joined another's transport call.
func waitCoalesced(t *testing.T, r *reactor.Reactor, path string, n uint64) {
	t.Helper()
	require.Eventually(t, func() bool { return r.Stats().Methods[path].Coalesced == n }, 5*time.Second, time.Millisecond,
		"waiting for %d calls of %s to coalesce", n, path)
}

// TestCoalesceIdenticalCalls checks that identical calls in flight at once share one
// transport call, and that each gets a response message of its own; and that calls whose
// request, metadata or WaitForReady differ, and calls past CoalesceMax, send their own.
func TestCoalesceIdenticalCalls(t *testing.T) {
	player := func(id string) *calls.Options {
		return &calls.Options{Metadata: metadata.Pairs("x-player", id)}
	}
	cases := []struct {
		name      string
		max       int
		msgs      []string         // the requests' messages, after the first, "read"
		opts      []*calls.Options // the calls' options, after the first's (nil), if any
		backend   int              // transport calls
		coalesced uint64
	}{
		{name: "identical", msgs: repeat("read", 49), backend: 1, coalesced: 49},
		{name: "another request", msgs: []string{"read", "other", "read", "other"}, backend: 2, coalesced: 3},
		{name: "other metadata", msgs: repeat("read", 3), opts: []*calls.Options{player("a"), player("b"), player("a")}, backend: 3, coalesced: 1},
		{name: "WaitForReady", msgs: repeat("read", 2), opts: []*calls.Options{{WaitForReady: true}, {WaitForReady: true}}, backend: 2, coalesced: 1},
		{name: "call options are never coalesced", msgs: repeat("read", 2), opts: []*calls.Options{{CallOptions: []grpc.CallOption{grpc.MaxCallRecvMsgSize(1 << 20)}}, nil}, backend: 2, coalesced: 1},
		{name: "CoalesceMax", max: 3, msgs: repeat("read", 6), backend: 3, coalesced: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatedBackend(codes.OK)
			r, _ := coalescing(t, g, tc.max)
			outs := []*outcome{submitEcho(r, "read", nil)}
			g.waitEntered(t, 1) // the first flight is on the wire: the others find it
			for i, msg := range tc.msgs {
				var opts *calls.Options
				if i < len(tc.opts) {
					opts = tc.opts[i]
				}
				outs = append(outs, submitEcho(r, msg, opts))
			}
			g.waitEntered(t, tc.backend-1)
			waitCoalesced(t, r, echo.Path(), tc.coalesced)
			g.open()
			tickUntilDelivered(t, r, outs)
			seen := map[*testpb.EchoResponse]bool{}
			for i, o := range outs {
				require.NoError(t, o.err, "call %d", i)
				require.Equal(t, append([]string{"read"}, tc.msgs...)[i], o.resp.GetMessage(), "call %d", i)
				require.False(t, seen[o.resp], "call %d got a response message another call got too", i)
				seen[o.resp] = true
			}
			require.Equal(t, tc.backend, g.Calls(echo.Path()))
			st := r.Stats()
			require.Equal(t, tc.coalesced, st.Methods[echo.Path()].Coalesced)
			require.Equal(t, uint64(len(outs)), st.Succeeded)
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestCoalesceMapFields checks that requests with map fields coalesce whatever order Go's
// maps put their entries in: the key is the deterministic encoding.
func TestCoalesceMapFields(t *testing.T) {
	g := newGatedBackend(codes.OK)
	r, _ := coalescing(t, g, 0)
	req := func() *testpb.EchoResponse {
		m := map[string]string{}
		for i := range 32 {
			m[fmt.Sprint("key", i)] = fmt.Sprint("value", i)
		}
		return &testpb.EchoResponse{Metadata: m}
	}
	var outs []*outcome
	submit := func() {
		o := &outcome{}
		outs = append(outs, o)
		reactor.Call(r, mapRead, req(), nil).OnSettled(func(resp *testpb.EchoResponse, err error) { o.resp, o.err = resp, err })
	}
	submit()
	g.waitEntered(t, 1)
	for range 9 {
		submit()
	}
	waitCoalesced(t, r, mapRead.Path(), 9)
	g.open()
	tickUntilDelivered(t, r, outs)
	for _, o := range outs {
		require.NoError(t, o.err)
		require.Equal(t, "32", o.resp.GetMessage())
	}
	require.Equal(t, 1, g.Calls(mapRead.Path()))
}

// TestCoalesceCancel checks that cancelling the call that started a transport call fails
// only that call, at once, and that the transport call is cancelled once every call it
// serves has been, the server seeing its context cancelled.
func TestCoalesceCancel(t *testing.T) {
	cases := []struct {
		name   string
		cancel []int // the calls cancelled, in order
	}{
		{name: "the first", cancel: []int{0}},
		{name: "all but one", cancel: []int{0, 2, 3}},
		{name: "all", cancel: []int{2, 0, 3, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newGatedBackend(codes.OK)
			r, _ := coalescing(t, g, 0)
			outs := []*outcome{submitEcho(r, "read", nil)}
			g.waitEntered(t, 1)
			for range 3 {
				outs = append(outs, submitEcho(r, "read", nil))
			}
			waitCoalesced(t, r, echo.Path(), 3)
			cancelled := make([]*outcome, 0, len(tc.cancel))
			for _, i := range tc.cancel {
				outs[i].p.Cancel()
				cancelled = append(cancelled, outs[i])
			}
			// Each settles at once, while the backend still holds the transport call.
			tickUntilDelivered(t, r, cancelled)
			for _, o := range cancelled {
				require.ErrorIs(t, o.err, calls.ErrCancelled)
			}
			if len(tc.cancel) == len(outs) {
				require.ErrorIs(t, recv(t, g.ended, "the server seeing the transport call cancelled"), context.Canceled)
				return
			}
			require.Empty(t, g.ended, "the transport call was cancelled while calls joined to it had not settled")
			g.open()
			tickUntilDelivered(t, r, outs)
			for i, o := range outs {
				if !errors.Is(o.err, calls.ErrCancelled) {
					require.NoError(t, o.err, "call %d", i)
				}
			}
		})
	}
}

// TestCoalesceFailure checks that a transport call that fails fails every call it serves,
// each with an error of its own.
func TestCoalesceFailure(t *testing.T) {
	g := newGatedBackend(codes.NotFound)
	r, _ := coalescing(t, g, 0)
	outs := []*outcome{submitEcho(r, "read", nil)}
	g.waitEntered(t, 1)
	for range 4 {
		outs = append(outs, submitEcho(r, "read", nil))
	}
	waitCoalesced(t, r, echo.Path(), 4)
	g.open()
	tickUntilDelivered(t, r, outs)
	seen := map[error]bool{}
	for _, o := range outs {
		require.Equal(t, codes.NotFound, status.Code(o.err))
		require.False(t, seen[o.err], "two calls got one error value")
		seen[o.err] = true
	}
	require.Equal(t, uint64(len(outs)), r.Stats().Failed[codes.NotFound])
}

// TestCoalesceResponseMetadata checks that every call that asks for the response header
// gets a copy of its own.
func TestCoalesceResponseMetadata(t *testing.T) {
	g := newGatedBackend(codes.OK)
	r, _ := coalescing(t, g, 0)
	opts := func() *calls.Options {
		return &calls.Options{Metadata: metadata.Pairs("x-player", "p"), ResponseMetadata: true}
	}
	outs := []*outcome{submitEcho(r, "read", opts())}
	g.waitEntered(t, 1)
	outs = append(outs, submitEcho(r, "read", opts()), submitEcho(r, "read", &calls.Options{Metadata: metadata.Pairs("x-player", "p")}))
	waitCoalesced(t, r, echo.Path(), 2)
	g.open()
	tickUntilDelivered(t, r, outs)
	h0, h1 := outs[0].p.Header(), outs[1].p.Header()
	require.Equal(t, []string{"p"}, h0.Get("x-served"))
	require.Equal(t, []string{"p"}, h1.Get("x-served"))
	h0.Set("x-served", "changed")
	require.Equal(t, []string{"p"}, h1.Get("x-served"), "two calls share a header")
	require.Nil(t, outs[2].p.Header(), "a call that did not ask got a header")
}

// TestCoalesceClose checks that Close with transport calls in progress settles every call
// joined to them exactly once, with ErrClosed, and cancels the transport call.
func TestCoalesceClose(t *testing.T) {
	g := newGatedBackend(codes.OK)
	clk := reactortest.NewManualClock(time.Now())
	r, err := reactor.New(reactor.Config{
		Conn: g.Backend, Clock: clk, Workers: 1, BatchSize: 4, MaxTimeout: time.Hour, DefaultTimeout: time.Minute,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Coalesce: true}},
	})
	require.NoError(t, err)
	defer g.open()
	runs := make([]int, 5)
	var errs []error
	p := reactor.Call(r, echo, &testpb.EchoRequest{Message: "read"}, nil)
	p.OnSettled(func(_ *testpb.EchoResponse, err error) { runs[0]++; errs = append(errs, err) })
	g.waitEntered(t, 1)
	for i := 1; i < len(runs); i++ {
		reactor.Go(r, echo, &testpb.EchoRequest{Message: "read"}, nil, func(_ *testpb.EchoResponse, err error) { runs[i]++; errs = append(errs, err) })
	}
	waitCoalesced(t, r, echo.Path(), 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	// Close cuts off what is left at once, and says so.
	require.ErrorIs(t, r.Close(ctx), context.Canceled)
	require.Equal(t, []int{1, 1, 1, 1, 1}, runs)
	for _, err := range errs {
		require.ErrorIs(t, err, calls.ErrClosed)
	}
	require.ErrorIs(t, recv(t, g.ended, "the server seeing the transport call cancelled"), context.Canceled)
	require.Zero(t, r.Stats().InFlight)
}

// TestCoalescePolicyErrors checks that New refuses a coalescing policy that is not
// idempotent, or has a negative cap, naming the field.
func TestCoalescePolicyErrors(t *testing.T) {
	cases := []struct {
		name   string
		policy reactor.MethodPolicy
		field  string
	}{
		{"not idempotent", reactor.MethodPolicy{Method: echo, Coalesce: true}, "Policies[0].Coalesce"},
		{"negative cap", reactor.MethodPolicy{Method: echo, Idempotent: true, Coalesce: true, CoalesceMax: -1}, "Policies[0].CoalesceMax"},
		{"cap without Coalesce", reactor.MethodPolicy{Method: echo, Idempotent: true, CoalesceMax: 4}, "Policies[0].CoalesceMax"},
		{"negative age", reactor.MethodPolicy{Method: echo, Idempotent: true, Coalesce: true, CoalesceMaxAge: -time.Millisecond}, "Policies[0].CoalesceMaxAge"},
		{"age over MaxTimeout", reactor.MethodPolicy{Method: echo, Idempotent: true, Coalesce: true, CoalesceMaxAge: time.Hour}, "Policies[0].CoalesceMaxAge"},
		{"age without Coalesce", reactor.MethodPolicy{Method: echo, Idempotent: true, CoalesceMaxAge: time.Second}, "Policies[0].CoalesceMaxAge"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reactor.New(reactor.Config{Conn: reactortest.NewBackend(), Policies: []reactor.MethodPolicy{tc.policy}})
			require.Error(t, err)
			require.True(t, strings.Contains(err.Error(), "Config."+tc.field+" "), "%v does not name %s", err, tc.field)
		})
	}
}

// stuckFlightConn is a Config.Conn whose Invoke, like a hook of the host that ignores its
// context, blocks until release is closed.
type stuckFlightConn struct {
	entered, returned chan struct{}
	release           chan struct{}
}

func (c *stuckFlightConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error {
	c.entered <- struct{}{}
	<-c.release
	c.returned <- struct{}{}
	return errors.New("stuckFlightConn: released")
}

func (c *stuckFlightConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "no streams")
}

// TestCoalesceCloseWithAStuckFlight checks that Close, giving up on a lane stuck in a hook
// while it runs a coalesced transport call, delivers every call joined to it exactly once,
// and that the lane delivers nothing when the hook returns.
func TestCoalesceCloseWithAStuckFlight(t *testing.T) {
	leakCheck(t) // the stuck lane exits once released
	conn := &stuckFlightConn{entered: make(chan struct{}, 4), returned: make(chan struct{}, 4), release: make(chan struct{})}
	cfg := reactor.Config{Conn: conn, Workers: 1, BatchSize: 2, DefaultTimeout: time.Minute, MaxTimeout: time.Hour,
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true, Coalesce: true}}}
	sc, err := cfg.ServiceConfigJSON()
	require.NoError(t, err)
	cfg.ConnServiceConfig = sc
	r, err := reactor.New(cfg)
	require.NoError(t, err)
	var once sync.Once
	release := func() { once.Do(func() { close(conn.release) }) }
	t.Cleanup(release)

	runs := make([]int, 4)
	errs := make([]error, 4)
	for i := range runs {
		// The first call's deadline is the latest, so that the others, submitted later on
		// the system clock, join it.
		opts := &calls.Options{Timeout: time.Minute}
		if i == 0 {
			opts.Timeout = 2 * time.Minute
		}
		reactor.Go(r, echo, &testpb.EchoRequest{Message: "read"}, opts, func(_ *testpb.EchoResponse, err error) { runs[i]++; errs[i] = err })
		if i == 0 {
			recv(t, conn.entered, "the flight in the stuck hook")
		}
	}
	waitCoalesced(t, r, echo.Path(), 3)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = r.Close(ctx)
	require.ErrorIs(t, err, reactor.ErrHookBlocked)
	require.ErrorContains(t, err, "1 invoker lane had not returned")
	require.Equal(t, []int{1, 1, 1, 1}, runs)
	for _, err := range errs {
		require.ErrorIs(t, err, calls.ErrClosed)
	}
	require.Zero(t, r.Stats().InFlight)

	release()
	recv(t, conn.returned, "the hook returning")
	r.Tick(0)
	require.Equal(t, []int{1, 1, 1, 1}, runs, "a call was delivered again")
}
