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
	"github.com/trixnew/prpc/internal/callcore"
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
// it could not take as Remaining and leaves the wake-up to the lane: once the lane has
// appended, Ready fires, and the next Tick delivers. Close's drain, which has nothing better
// to do, waits instead.
//
// The test holds the queue's lock itself, so that a lane settling a third call blocks on it,
// as a lane preempted while appending holds it up; nothing but that lane wakes the host
// afterwards, so the test fails if lanes stop waking the host once they have appended.
func TestTickDoesNotWaitForTheOutbox(t *testing.T) {
	r, err := New(Config{Conn: answerConn{}})
	require.NoError(t, err)
	var settled atomic.Int32 // read by Never's condition, which may outlive Never
	Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled.Add(1) })
	Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled.Add(1) })
	require.Eventually(t, func() bool { return r.out.Len() == 2 }, 5*time.Second, time.Millisecond)
	drainReady := func() {
		select {
		case <-r.Ready():
		default:
		}
	}
	drainReady() // the two calls' wake-up

	release := holdOutbox(r)
	Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled.Add(1) })
	// The third call's lane answers it at once and blocks appending it: it is in flight until
	// it has appended.
	require.Eventually(t, func() bool { return r.inFlight.Load() == 1 }, 5*time.Second, time.Millisecond)
	ticked := make(chan TickReport, 1)
	go func() { ticked <- r.Tick(time.Second) }()
	var rep TickReport
	select {
	case rep = <-ticked:
	case <-time.After(5 * time.Second):
		t.Fatal("Tick waited for the outbox")
	}
	require.Equal(t, TickReport{Delivered: 0, Remaining: 2}, rep, "the third call is not in the queue yet")
	drainReady()
	require.False(t, r.armed.Load(), "the Tick left the wake-up to the lane")
	release() // the lane appends, then wakes the host
	select {
	case <-r.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("the lane did not wake the host once it had appended")
	}
	require.Zero(t, r.inFlight.Load())
	rep = r.Tick(time.Second)
	require.Equal(t, 3, rep.Delivered)
	require.EqualValues(t, 3, settled.Load())

	Call(r, tickEcho, &testpb.EchoRequest{}, nil).Always(func() { settled.Add(1) })
	require.Eventually(t, func() bool { return r.out.Len() == 1 }, 5*time.Second, time.Millisecond)
	release = holdOutbox(r)
	drained := make(chan TickReport, 1)
	go func() { drained <- r.tick(0, true) }() // as Close drains
	require.Never(t, func() bool { return len(drained) > 0 || settled.Load() == 4 }, 20*time.Millisecond, time.Millisecond,
		"the drain must wait for the outbox")
	release()
	require.Equal(t, 1, (<-drained).Delivered)
	require.EqualValues(t, 4, settled.Load())

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Close(ctx))
}

// holdOutbox holds the outbox's lock, as a lane preempted while appending holds it, until the
// returned function is called.
func holdOutbox(r *Reactor) (release func()) {
	held, done := make(chan struct{}), make(chan struct{})
	go r.out.Inspect(func([]*callcore.Call) {
		close(held)
		<-done
	})
	<-held
	return func() { close(done) }
}
