package reactor_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestCallNeverBlocks(t *testing.T) {
	const workers, batch, maxOutstanding = 2, 2, 6
	r, g, h := startGated(t, reactor.Config{Workers: workers, BatchSize: batch, MaxOutstanding: maxOutstanding})

	// Every lane busy with a held call, one more queued: one slot short of MaxOutstanding.
	var done int
	count := func(*testpb.EchoResponse) { done++ }
	for i := range workers * batch {
		reactor.Call(r, echo, held(fmt.Sprint("busy", i)), nil).Then(count)
	}
	g.waitEntered(t, workers*batch)
	reactor.Call(r, echo, held("queued"), nil).Then(count)
	waitGauges(t, r, workers*batch, 1)
	require.Equal(t, maxOutstanding-1, r.Stats().Pending, "the reactor goroutine counts the calls it has taken")

	// The last admitted call and one over the limit, from another goroutine so that a Call
	// that blocks fails the test instead of hanging it. Each Call takes microseconds; 1 s
	// is a generous bound for that, even under -race on a loaded machine.
	type result struct {
		last, over *calls.Promise[*testpb.EchoResponse]
	}
	returned := make(chan result, 1)
	go func() {
		last := reactor.Call(r, echo, held("last"), nil)
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
	require.Equal(t, "last", got)
}

func TestOverloadCountsUndeliveredCompletions(t *testing.T) {
	const maxOutstanding = 4
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 2, MaxOutstanding: maxOutstanding})

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

func TestMethodsAllowlist(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Methods: []calls.Descriptor{echo}})

	before := srv.Calls()
	p := reactor.Call(r, otherMethod, &testpb.EchoRequest{}, nil)
	require.Equal(t, calls.Failed, p.State())
	require.ErrorIs(t, p.Err(), calls.ErrInvalidArgument)
	require.Contains(t, p.Err().Error(), otherMethod.Path())
	require.Contains(t, p.Err().Error(), "Config.Methods")

	_, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "allowed"}, nil)
	require.NoError(t, err)
	require.Equal(t, "allowed", resp.GetMessage())
	require.Equal(t, before+1, srv.Calls())
}
