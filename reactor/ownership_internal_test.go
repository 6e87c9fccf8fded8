package reactor

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/testpb"
)

// TestOwnershipReleasedWhenTheRingIsGone checks that a call that Config.CheckRequestOwnership
// entered in the owned set, and that submit then rejects because the reactor goroutine has
// exited, leaves the set: its request, modified, may be submitted again and gets ErrClosed,
// not the ownership check's error.
func TestOwnershipReleasedWhenTheRingIsGone(t *testing.T) {
	r, err := newReactor(Config{Conn: simConn{}, CheckRequestOwnership: true})
	require.NoError(t, err)
	r.subs.Close(func(uint64, *callqueue.Submission) {}) // the reactor goroutine exited, and Close has not set closing yet
	req := &testpb.EchoRequest{Message: "first"}
	for _, msg := range []string{"first", "second"} {
		req.Message = msg
		err := Call(r, simEcho, req, nil).Err()
		require.ErrorIs(t, err, calls.ErrClosed, msg)
		require.Contains(t, err.Error(), "reactor closed before the call was sent", msg)
		require.Zero(t, r.owned.len(), "%s: the rejected call owns nothing", msg)
	}
}
