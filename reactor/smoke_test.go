package reactor_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestSmoke(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	var got string
	var failed error
	n := 0
	for i := 0; i < 100; i++ {
		reactor.Call(r, echo, &testpb.EchoRequest{Message: "hi"}, nil).
			Then(func(resp *testpb.EchoResponse) { got = resp.GetMessage() }).
			OnError(func(err error) { failed = err }).
			Always(func() { n++ })
	}
	waitFor(t, r, func() bool { return n == 100 })
	require.NoError(t, failed)
	require.Equal(t, "hi", got)
	st := r.Stats()
	require.EqualValues(t, 100, st.Submitted)
	require.EqualValues(t, 100, st.Succeeded)
	require.Zero(t, st.Pending)
	var timeoutErr error
	p := reactor.Call(r, echo, &testpb.EchoRequest{Block: true}, &calls.Options{Timeout: 50 * time.Millisecond}).OnError(func(err error) { timeoutErr = err })
	waitFor(t, r, func() bool { return timeoutErr != nil })
	require.ErrorIs(t, timeoutErr, calls.ErrTimeout)
	require.Equal(t, calls.Failed, p.State())
	t.Log(timeoutErr)
}
