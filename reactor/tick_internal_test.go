package reactor

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
)

// answerConn answers every call at once with an empty response.
type answerConn struct{}

func (answerConn) Invoke(context.Context, string, any, any, ...grpc.CallOption) error { return nil }

func (answerConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "answerConn has no streams")
}

var tickEcho = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctick.Tick/Echo")

// TestTickDoesNotWaitForTheOutbox: while another goroutine holds the delivery queue (a lane
// appending to it, whose thread has lost its CPU), a budgeted Tick returns at once with what
// it could not take as Remaining and leaves the wake-up to that goroutine; the next Tick, once
// Ready fires, delivers. Close's drain, which has nothing better to do, waits instead.
func TestTickDoesNotWaitForTheOutbox(t *testing.T) {
	r, err := New(Config{Conn: answerConn{}})
	require.NoError(t, err)
	var settled atomic.Int32 // read by Never's condition, which may outlive Never
	Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled.Add(1) })
	Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled.Add(1) })
	require.Eventually(t, func() bool { return r.out.n.Load() == 2 }, 5*time.Second, time.Millisecond)

	r.out.mu.Lock() // as a lane appending
	ticked := make(chan TickReport, 1)
	go func() { ticked <- r.Tick(time.Second) }()
	var rep TickReport
	select {
	case rep = <-ticked:
	case <-time.After(5 * time.Second):
		t.Fatal("Tick waited for the outbox")
	}
	require.Equal(t, TickReport{Delivered: 0, Remaining: 2}, rep)
	select {
	case <-r.Ready():
	default:
	}
	r.out.mu.Unlock()
	r.wakeHost() // as the lane does once it has appended
	select {
	case <-r.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up after the outbox was released")
	}
	rep = r.Tick(time.Second)
	require.Equal(t, 2, rep.Delivered)
	require.EqualValues(t, 2, settled.Load())

	Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled.Add(1) })
	require.Eventually(t, func() bool { return r.out.n.Load() == 1 }, 5*time.Second, time.Millisecond)
	r.out.mu.Lock()
	drained := make(chan TickReport, 1)
	go func() { drained <- r.tick(0, true) }() // as Close drains
	require.Never(t, func() bool { return len(drained) > 0 || settled.Load() == 3 }, 20*time.Millisecond, time.Millisecond,
		"the drain must wait for the outbox")
	r.out.mu.Unlock()
	require.Equal(t, 1, (<-drained).Delivered)
	require.EqualValues(t, 3, settled.Load())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Close(ctx))
}
