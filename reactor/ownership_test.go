package reactor_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// The messages of Config.CheckRequestOwnership's errors, in full, for the Echo method.
const (
	ownedModifiedErr = "prpc: /prpctest.TestService/Echo: InvalidArgument: request modified while an earlier call that has not settled owns it; " +
		"never sent. Call and Go own their request until the call settles: build a fresh request per call (found by Config.CheckRequestOwnership)"
	modifiedErr = "prpc: /prpctest.TestService/Echo: InvalidArgument: request modified after it was submitted, before its call was sent; " +
		"never sent. Call and Go own their request until the call settles: build a fresh request per call (found by Config.CheckRequestOwnership)"
)

// heldLane is a reactor over a reactortest.Backend with one lane, which a first call ("hold")
// keeps busy until release: calls submitted meanwhile wait for it, owned by their calls, and
// no lane reads their requests, so that a test may modify them without a data race. The
// backend records the message of every other call it receives.
type heldLane struct {
	r        *reactor.Reactor
	release  chan struct{}
	mu       sync.Mutex
	received []string
}

// newHeldLane starts the reactor, with or without the ownership check, and waits until the
// "hold" call occupies its lane. Its clock is manual and never moves, so no call times out.
func newHeldLane(t *testing.T, check bool) *heldLane {
	h := &heldLane{release: make(chan struct{})}
	entered := make(chan struct{})
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if req.GetMessage() == "hold" {
			close(entered)
			select {
			case <-h.release:
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		} else {
			h.mu.Lock()
			h.received = append(h.received, req.GetMessage())
			h.mu.Unlock()
		}
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	cfg := reactor.Config{
		Workers:               1,
		BatchSize:             1,
		Clock:                 reactortest.NewManualClock(time.Unix(0, 0)),
		DefaultTimeout:        time.Minute,
		MaxTimeout:            time.Minute,
		CheckRequestOwnership: check,
	}
	if check {
		h.r = reactortest.NewReactor(t, b, cfg) // which turns the check on anyway
	} else {
		cfg.Conn = b
		r, err := reactor.New(cfg)
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, r.Close(context.Background())) })
		h.r = r
	}
	reactor.Call(h.r, echo, &testpb.EchoRequest{Message: "hold"}, nil)
	select {
	case <-entered:
	case <-time.After(bound):
		t.Fatalf("the hold call did not reach the backend within %v", bound)
	}
	return h
}

// finish releases the lane and ticks until every call is delivered, and returns what the
// backend received besides the hold call.
func (h *heldLane) finish(t *testing.T) []string {
	close(h.release)
	reactortest.Flush(t, h.r)
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.received
}

// ownedOutcome is what one call's submitter saw: the error Call or Go returned at once (the
// promise's Err when Call returns), and what its callback got.
type ownedOutcome struct {
	atOnce error
	msg    string
	err    error
	runs   int
}

// ownedForms submit an Echo call of req, as Call with Then and OnError or as Go, and return
// its outcome, filled in by its callback.
var ownedForms = []struct {
	name   string
	submit func(r *reactor.Reactor, req *testpb.EchoRequest) *ownedOutcome
}{
	{"Call", func(r *reactor.Reactor, req *testpb.EchoRequest) *ownedOutcome {
		o := &ownedOutcome{}
		p := reactor.Call(r, echo, req, nil)
		o.atOnce = p.Err()
		p.Then(func(resp *testpb.EchoResponse) { o.msg = resp.GetMessage(); o.runs++ }).
			OnError(func(err error) { o.err = err; o.runs++ })
		return o
	}},
	{"Go", func(r *reactor.Reactor, req *testpb.EchoRequest) *ownedOutcome {
		o := &ownedOutcome{}
		o.atOnce = reactor.Go(r, echo, req, nil, func(resp *testpb.EchoResponse, err error) {
			o.msg, o.err = resp.GetMessage(), err
			o.runs++
		})
		return o
	}},
}

// purchaseKey is the idempotency key of purchase i.
func purchaseKey(i int) string { return fmt.Sprintf("purchase-%03d", i) }

// TestCheckRequestOwnership checks Config.CheckRequestOwnership, with Call and with Go. One
// request reused for 200 purchases, its key changed before each while the earlier calls still
// own it, sends nothing: the first call fails before its lane sends it, the others at once,
// each with an error naming the contract; without the check all 200 are sent with the last
// key. A request modified after Call returned fails the same way, unsent. Calls that share a
// request nobody modifies, and calls with a fresh request each, all succeed with the check on.
//
// Every call is submitted while the reactor's only lane is held by another call, so the
// requests are modified before any lane reads them (no data race); the reactor's manual clock
// never moves, so nothing times out.
func TestCheckRequestOwnership(t *testing.T) {
	const n = 200
	// The outcome each call must have: "sent <message>", "owned" (rejected when submitted,
	// as an earlier call owns its modified request) or "modified" (failed before its lane
	// sent it).
	repeat := func(s string, k int) []string {
		out := make([]string, k)
		for i := range out {
			out[i] = s
		}
		return out
	}
	keys := func(prefix string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = prefix + purchaseKey(i+1)
		}
		return out
	}
	// reuseOneRequest is the new user's game: one request for every purchase, its key
	// changed each time.
	reuseOneRequest := func(submit func(*testpb.EchoRequest) *ownedOutcome) []*ownedOutcome {
		req := &testpb.EchoRequest{}
		var out []*ownedOutcome
		for i := 1; i <= n; i++ {
			req.Message = purchaseKey(i)
			out = append(out, submit(req))
		}
		return out
	}
	tests := []struct {
		name  string
		check bool
		play  func(submit func(*testpb.EchoRequest) *ownedOutcome) []*ownedOutcome
		want  []string // each call's outcome
		sent  []string // what the backend received, besides the hold call
	}{
		{
			name:  "one request reused for 200 purchases",
			check: true,
			play:  reuseOneRequest,
			want:  append([]string{"modified"}, repeat("owned", n-1)...),
			sent:  nil,
		},
		{
			name:  "one request reused for 200 purchases, check off",
			check: false,
			play:  reuseOneRequest,
			want:  repeat("sent "+purchaseKey(n), n), // the bug the check catches
			sent:  repeat(purchaseKey(n), n),
		},
		{
			name:  "request modified after the call was submitted",
			check: true,
			play: func(submit func(*testpb.EchoRequest) *ownedOutcome) []*ownedOutcome {
				req := &testpb.EchoRequest{Message: "buy", Payload: []byte("sword")}
				o := submit(req)
				req.Payload = []byte("shield")
				return []*ownedOutcome{o}
			},
			want: []string{"modified"},
			sent: nil,
		},
		{
			name:  "one request shared by 200 calls, never modified",
			check: true,
			play: func(submit func(*testpb.EchoRequest) *ownedOutcome) []*ownedOutcome {
				req := &testpb.EchoRequest{Message: "shared", Payload: []byte("sword")}
				var out []*ownedOutcome
				for range n {
					out = append(out, submit(req))
				}
				return out
			},
			want: repeat("sent shared", n),
			sent: repeat("shared", n),
		},
		{
			name:  "a fresh request per purchase",
			check: true,
			play: func(submit func(*testpb.EchoRequest) *ownedOutcome) []*ownedOutcome {
				var out []*ownedOutcome
				for i := 1; i <= n; i++ {
					out = append(out, submit(&testpb.EchoRequest{Message: purchaseKey(i)}))
				}
				return out
			},
			want: keys("sent "),
			sent: keys(""),
		},
	}
	for _, form := range ownedForms {
		for _, tt := range tests {
			t.Run(form.name+"/"+tt.name, func(t *testing.T) {
				h := newHeldLane(t, tt.check)
				outcomes := tt.play(func(req *testpb.EchoRequest) *ownedOutcome { return form.submit(h.r, req) })
				sent := h.finish(t)
				require.Len(t, outcomes, len(tt.want))
				for i, o := range outcomes {
					require.Equal(t, 1, o.runs, "call %d: its callback runs once", i+1)
					switch want := tt.want[i]; want {
					case "owned":
						require.EqualError(t, o.atOnce, ownedModifiedErr, "call %d: rejected at once", i+1)
						require.ErrorIs(t, o.atOnce, calls.ErrInvalidArgument)
						require.Equal(t, codes.InvalidArgument, status.Code(o.atOnce))
						require.Equal(t, o.atOnce, o.err, "call %d: its callback gets the rejection", i+1)
					case "modified":
						require.NoError(t, o.atOnce, "call %d: submitted", i+1)
						require.EqualError(t, o.err, modifiedErr, "call %d", i+1)
						require.ErrorIs(t, o.err, calls.ErrInvalidArgument)
						require.Equal(t, codes.InvalidArgument, status.Code(o.err))
					default:
						require.NoError(t, o.atOnce, "call %d: submitted", i+1)
						require.NoError(t, o.err, "call %d", i+1)
						require.Equal(t, want, "sent "+o.msg, "call %d", i+1)
					}
				}
				require.Equal(t, tt.sent, sent, "what reached the backend")
			})
		}
	}
}

// TestCheckRequestOwnershipAfterSettling checks that, with Config.CheckRequestOwnership, a
// request is the caller's again once its call settles: the call's callback may modify it and
// submit it again, five times in a row.
func TestCheckRequestOwnershipAfterSettling(t *testing.T) {
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{CheckRequestOwnership: true})
	req := &testpb.EchoRequest{}
	var got []string
	var next func(resp *testpb.EchoResponse)
	next = func(resp *testpb.EchoResponse) {
		got = append(got, resp.GetMessage())
		if len(got) < 5 {
			req.Message = purchaseKey(len(got) + 1) // the same request, changed once settled
			reactor.Call(r, echo, req, nil).Then(next).OnError(func(err error) { t.Errorf("purchase %d: %v", len(got)+1, err) })
		}
	}
	req.Message = purchaseKey(1)
	reactor.Call(r, echo, req, nil).Then(next).OnError(func(err error) { t.Errorf("purchase 1: %v", err) })
	reactortest.Flush(t, r)
	require.Equal(t, []string{purchaseKey(1), purchaseKey(2), purchaseKey(3), purchaseKey(4), purchaseKey(5)}, got)
}

// TestCheckRequestOwnershipMapShared checks that a request with a map field, shared by calls
// that own it at once and never modified, passes Config.CheckRequestOwnership: the check
// compares deterministic encodings, which do not depend on the order of map iteration.
func TestCheckRequestOwnershipMapShared(t *testing.T) {
	mapMethod := calls.MustMethod[*testpb.EchoResponse, *testpb.EchoResponse]("/prpctest.Unlisted/Map")
	b := reactortest.NewBackend()
	reactortest.Handle(b, mapMethod, func(_ context.Context, req *testpb.EchoResponse) (*testpb.EchoResponse, error) {
		return req, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{CheckRequestOwnership: true})
	req := &testpb.EchoResponse{Metadata: make(map[string]string)}
	for i := range 16 {
		req.Metadata[fmt.Sprint("key ", i)] = fmt.Sprint("value ", i)
	}
	const n = 100
	ok := 0
	for range n { // no Tick meanwhile: every call owns req until the Flush below delivers it
		reactor.Call(r, mapMethod, req, nil).
			Then(func(resp *testpb.EchoResponse) { require.Len(t, resp.GetMetadata(), 16); ok++ }).
			OnError(func(err error) { t.Error(err) })
	}
	reactortest.Flush(t, r)
	require.Equal(t, n, ok)
	require.Equal(t, n, b.Calls(mapMethod.Path()))
}
