package reactor_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// TestTickAfterClose checks what Tick does once Close has returned: nothing, at once, while
// nothing is queued for it; and, at the next Tick, signalled by Ready but not by OnReady, the
// callbacks of a call made after Close and those added to a promise that Close delivered.
func TestTickAfterClose(t *testing.T) {
	var onReady atomic.Int32
	clock := reactortest.NewManualClock(time.Now()) // so that TickReport.Elapsed is exactly 0
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{Clock: clock, OnReady: func() { onReady.Add(1) }})

	var got []string // written by callbacks, on this goroutine
	early := reactor.Call(r, echo, &testpb.EchoRequest{Message: "early"}, nil).
		Then(func(resp *testpb.EchoResponse) { got = append(got, resp.GetMessage()) })
	require.NoError(t, r.Close(closeCtx(t, bound)))
	require.Equal(t, []string{"early"}, got, "Close delivered the call")
	require.Equal(t, calls.Succeeded, early.State())
	drainReady(r)
	onReadyAtClose := onReady.Load()

	require.Equal(t, reactor.TickReport{}, r.Tick(time.Second), "nothing left to deliver")
	require.False(t, readySignalled(r))

	early.Then(func(resp *testpb.EchoResponse) { got = append(got, "again "+resp.GetMessage()) })
	late := reactor.Call(r, echo, &testpb.EchoRequest{Message: "late"}, nil).
		OnError(func(err error) { got = append(got, "late: "+err.Error()) })
	require.ErrorIs(t, late.Err(), calls.ErrClosed)
	require.Equal(t, []string{"early"}, got, "no callback runs before the next Tick")
	require.True(t, readySignalled(r), "Ready signals what waits for Tick after Close")

	require.Equal(t, reactor.TickReport{Delivered: 2}, r.Tick(time.Second))
	require.Equal(t, []string{"early", "again early", "late: " + late.Err().Error()}, got)
	require.Equal(t, reactor.TickReport{}, r.Tick(time.Second))
	require.Equal(t, onReadyAtClose, onReady.Load(), "OnReady is not called after Close")
}
