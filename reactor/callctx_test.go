package reactor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// The transport call's context carries the call's deadline for gRPC to send, or the parent
// context's if that is earlier; the parent's expiry ends the call.
func TestTransportContextDeadline(t *testing.T) {
	parentDeadline := time.Now().Add(200 * time.Millisecond)
	parent, cancel := context.WithDeadline(context.Background(), parentDeadline)
	defer cancel()
	tests := []struct {
		name   string
		opts   *calls.Options
		within func(submit time.Time) (time.Time, time.Time) // bounds of the deadline gRPC sees
	}{
		{"the call's own", &calls.Options{Timeout: 3 * time.Second}, func(submit time.Time) (time.Time, time.Time) {
			return submit.Add(3 * time.Second), time.Now().Add(3 * time.Second)
		}},
		{"an earlier parent's", &calls.Options{Timeout: 3 * time.Second, Context: parent}, func(time.Time) (time.Time, time.Time) {
			return parentDeadline, parentDeadline
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &recordingConn{block: make(chan struct{}), entered: make(chan struct{}, 1)}
			r := newReactor(t, nil, reactor.Config{Conn: fake})
			submit := time.Now()
			var err error
			var took time.Duration
			done := false
			reactor.Call(r, echo, &testpb.EchoRequest{Message: "x"}, tc.opts).
				OnError(func(e error) { err = e }).Always(func() { took, done = time.Since(submit), true })
			<-fake.entered
			lo, hi := tc.within(submit)
			fake.mu.Lock()
			got := fake.calls[0].deadline
			fake.mu.Unlock()
			require.False(t, got.Before(lo), "deadline %v before %v", got, lo)
			require.False(t, got.After(hi), "deadline %v after %v", got, hi)
			if tc.opts.Context == nil {
				close(fake.block)
				waitFor(t, r, func() bool { return done })
				require.NoError(t, err)
				return
			}
			// The parent expires first: the call ends with ErrTimeout (its deadline passed),
			// well before its own 3 s. The 2 s bound is ten times the parent's 200 ms, a
			// generous margin that still tells the two deadlines apart.
			waitFor(t, r, func() bool { return done })
			require.True(t, errors.Is(err, calls.ErrTimeout), "%v", err)
			require.Less(t, took, 2*time.Second, "ended by the parent's deadline, not by its own")
		})
	}
}
