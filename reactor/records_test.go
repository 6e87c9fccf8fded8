package reactor_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestRecycledRecordsNeverMixCalls: call records are reused as soon as their calls are
// delivered, while cancels, deadline entries and queue entries of earlier calls may still be
// on their way. Over waves of calls that each reuse the records the wave before freed, with
// random delays, request sizes, short timeouts and cancels (some only after delivery), every
// call settles exactly once, every success carries its own request's message, and a delivered
// promise never changes afterwards.
func TestRecycledRecordsNeverMixCalls(t *testing.T) {
	srv := testserver.Start(t)
	const waves, perWave, timeout = 8, 128, 40 * time.Millisecond
	r := newReactor(t, srv, reactor.Config{Workers: 2, BatchSize: 16})
	h := newHost(t, r)
	var warm bool // connect first, so that dialling does not decide the first outcomes
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { warm = true })
	h.waitFor(func() bool { return warm })

	type seen struct {
		state calls.State
		err   error
		msg   string
	}
	var delivered []*call
	var snapshots []seen
	var cancels sync.WaitGroup
	cancelledCall := map[*call]bool{}
	for w := range waves {
		wave := make([]*call, perWave)
		for i := range perWave {
			// Lengths on both sides of a new record's first buffer, so that a request that
			// outgrows it would show if it spilled into a neighbour's.
			id := fmt.Sprintf("w%d-%d-%s", w, i, strings.Repeat("x", rand.IntN(100)))
			req := &testpb.EchoRequest{Message: id, DelayMs: int64(rand.IntN(60))} // around the timeout
			c := h.submit(echo, req, &calls.Options{Timeout: timeout})
			wave[i] = c
			if i%3 == 0 { // cancel at a random time: before, during or after delivery
				cancelledCall[c] = true
				cancels.Add(1)
				time.AfterFunc(time.Duration(rand.IntN(80))*time.Millisecond, func() {
					defer cancels.Done()
					c.p.Cancel()
				})
			}
		}
		h.settle(wave...)
		for _, c := range wave {
			require.True(t, c.settledOnce(), "%v", c)
			switch {
			case c.thens == 1:
				require.Equal(t, c.id, c.resp.GetMessage(), "call %s got another call's response", c.id)
			case errors.Is(c.err, calls.ErrCancelled):
				require.True(t, cancelledCall[c], "call %s was cancelled by another call's cancel", c.id)
			case errors.Is(c.err, calls.ErrShed): // too little time left when a lane was free
			default:
				require.ErrorIs(t, c.err, calls.ErrTimeout, "call %s", c.id)
			}
			delivered = append(delivered, c)
			snapshots = append(snapshots, seen{c.p.State(), c.p.Err(), c.resp.GetMessage()})
		}
	}
	cancels.Wait()
	var flushed bool // late cancels and late responses have had their turn
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { flushed = true })
	h.waitFor(func() bool { return flushed })
	h.Tick(time.Second)
	for i, c := range delivered {
		require.True(t, c.settledOnce(), "%v", c)
		require.Equal(t, snapshots[i], seen{c.p.State(), c.p.Err(), c.resp.GetMessage()}, "call %s changed after delivery", c.id)
	}
	require.Zero(t, r.Stats().Pending)
}
