package reactor

import (
	"context"
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callqueue"
	"github.com/trixnew/prpc/internal/testpb"
)

// TestSettledCallsAreNotRetained: once the lanes have settled every call and Tick has
// delivered them, nothing in the reactor keeps a call record reachable, not even the deadline
// heap, whose entries lanes cannot remove themselves: the last settlement wakes the reactor
// goroutine to drop them, long before any deadline.
func TestSettledCallsAreNotRetained(t *testing.T) {
	tests := []struct {
		name  string
		calls int
	}{
		{"fewer than a pruning batch", callqueue.CompactAfter / 2},
		{"several batches", 3*callqueue.CompactAfter + 7},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := New(Config{Conn: answerConn{}, MaxOutstanding: tt.calls, DefaultTimeout: time.Hour, MaxTimeout: time.Hour})
			require.NoError(t, err)
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				require.NoError(t, r.Close(ctx))
			}()
			refs := make([]weak.Pointer[calls.Promise[*testpb.EchoResponse]], tt.calls)
			delivered := 0
			for i := range refs {
				p := Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { delivered++ })
				refs[i] = weak.Make(p)
			}
			deadline := time.After(5 * time.Second)
			for delivered < tt.calls {
				select {
				case <-r.Ready():
					r.Tick(time.Second)
				case <-deadline:
					t.Fatalf("%d of %d calls delivered", delivered, tt.calls)
				}
			}
			require.Eventually(t, func() bool {
				runtime.GC()
				for _, ref := range refs {
					if ref.Value() != nil {
						return false
					}
				}
				return true
			}, 5*time.Second, 10*time.Millisecond, "a delivered call is still reachable")
		})
	}
}
