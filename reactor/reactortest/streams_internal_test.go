package reactortest

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/standin"
	"github.com/trixnew/prpc/internal/testpb"
)

// TestStreamDeadlineOnManualClock checks that a stream handler's context ends, with
// context.DeadlineExceeded, when the ManualClock reaches the stream's deadline and not a
// nanosecond before, and that its Deadline is on the system clock; that the end of a handler
// that returns after its deadline never reaches the client, whose stream ends when its own
// context does, as a reactor times it out on the same clock; and that a stream whose
// deadline has passed when it opens does not run its handler.
func TestStreamDeadlineOnManualClock(t *testing.T) {
	defer goleak.VerifyNone(t)
	const path, timeout = "/prpctest.Funcs/Watch", 2 * time.Second
	tests := []struct {
		name    string
		elapsed time.Duration // on the clock before the stream opens
	}{
		{"ends at its deadline", 0},
		{"passed before it opens", timeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := NewManualClock(time.Date(2040, 1, 1, 0, 0, 0, 0, time.UTC))
			b := NewBackend()
			started := make(chan context.Context, 1)
			HandleStream(b, calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse](path), func(ctx context.Context, _ *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
				started <- ctx
				if err := send(&testpb.EchoResponse{Message: "before"}); err != nil {
					return err
				}
				<-ctx.Done()
				_ = grpc.SetTrailer(ctx, metadata.Pairs("t", "1"))
				return status.Error(codes.Aborted, "the handler's end")
			})
			ctx := standin.WithDeadline(context.Background(), standin.Deadline{Clock: clock, At: clock.Now().Add(timeout)})
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			clock.Advance(tc.elapsed)
			before := time.Now()
			cs, err := b.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, path)
			require.NoError(t, err)
			err = cs.SendMsg(&testpb.WatchRequest{})
			if tc.elapsed > 0 {
				require.Equal(t, io.EOF, err, "no handler takes it")
			} else {
				require.NoError(t, err)
			}
			s := cs.(*clientStream).s
			if tc.elapsed > 0 {
				<-s.ended
				require.Empty(t, started, "the handler did not run")
			} else {
				hctx := <-started
				deadline, ok := hctx.Deadline()
				require.True(t, ok)
				require.WithinRange(t, deadline, before.Add(timeout), time.Now().Add(timeout))
				var first testpb.EchoResponse
				require.NoError(t, cs.RecvMsg(&first))
				require.Equal(t, "before", first.GetMessage())
				clock.Advance(timeout - time.Nanosecond)
				require.NoError(t, hctx.Err(), "a nanosecond before the deadline")
				clock.Advance(time.Nanosecond)
				require.Equal(t, context.DeadlineExceeded, hctx.Err(), "at the deadline, before Advance returns")
				<-s.ended // the handler's end is recorded: a client reading now would see it
			}
			cancel() // the client's deadline, as the reactor's timer
			err = cs.RecvMsg(&testpb.EchoResponse{})
			require.Equal(t, codes.Canceled, status.Code(err), "the client's own end, not the handler's: %v", err)
			require.Nil(t, cs.Trailer())
			md, _ := cs.Header()
			if tc.elapsed > 0 {
				require.Nil(t, md)
			} else {
				require.Equal(t, metadata.MD{}, md, "sent with the first message")
			}
			require.Equal(t, 1, b.Streams(path))
		})
	}
}
