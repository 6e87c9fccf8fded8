package reactor_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// The messages of a Tick or Close refused because another Tick or Close holds the reactor.
const (
	closeInTickCallback  = "prpc: Close called from inside a promise callback; the reactor is still open: call Close on the host goroutine after Tick returns"
	closeInCloseCallback = "prpc: Close called from inside a promise callback run by Close, and refused; the outer Close goes on"
	tickInTickCallback   = "prpc: Tick called from inside a promise callback run by Tick, and refused; the outer Tick goes on"
	tickInCloseCallback  = "prpc: Tick called from inside a promise callback run by Close, and refused; the outer Close goes on"
	closeConcurrent      = "prpc: Close called concurrently with Tick or Close on another goroutine, and refused: call Tick and Close from one goroutine"
	tickConcurrent       = "prpc: Tick called concurrently with Tick or Close on another goroutine, and refused: call Tick and Close from one goroutine"
)

// panicValue runs f and returns what it panicked with, or nil.
func panicValue(f func()) (p any) {
	defer func() { p = recover() }()
	f()
	return nil
}

// TestReenteredFromTickCallback checks the panic that Config.OnCallbackPanic receives when a
// callback that Tick runs calls Tick or Close, and that the reactor stays open and serves the
// next call.
func TestReenteredFromTickCallback(t *testing.T) {
	tests := []struct {
		name    string
		reenter func(r *reactor.Reactor)
		want    string
	}{
		{"Close", func(r *reactor.Reactor) { _ = r.Close(context.Background()) }, closeInTickCallback},
		{"Tick", func(r *reactor.Reactor) { r.Tick(time.Second) }, tickInTickCallback},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var panics []any // written on the Tick goroutine only
			r := reactortest.NewReactor(t, echoBackend(), reactor.Config{OnCallbackPanic: func(p any) { panics = append(panics, p) }})
			var after bool
			reactor.Call(r, echo, &testpb.EchoRequest{}, nil).
				Always(func() { tc.reenter(r) }).
				Always(func() { after = true })
			reactortest.Flush(t, r)
			require.True(t, after, "the next callback ran")
			require.Equal(t, []any{tc.want}, panics)

			p, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "later"}, nil)
			require.NoError(t, err, "the refused call closed the reactor")
			require.Equal(t, "later", resp.GetMessage())
			require.Equal(t, calls.Succeeded, p.State())
		})
	}
}

// TestReenteredFromCloseCallback checks the panic that Config.OnCallbackPanic receives when a
// callback that Close runs calls Tick or Close, and that the outer Close still closes the
// reactor.
func TestReenteredFromCloseCallback(t *testing.T) {
	tests := []struct {
		name    string
		reenter func(r *reactor.Reactor)
		want    string
	}{
		{"Close", func(r *reactor.Reactor) { _ = r.Close(context.Background()) }, closeInCloseCallback},
		{"Tick", func(r *reactor.Reactor) { r.Tick(time.Second) }, tickInCloseCallback},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var panics []any // written on the goroutine inside Close only
			r := reactortest.NewReactor(t, echoBackend(), reactor.Config{OnCallbackPanic: func(p any) { panics = append(panics, p) }})
			var after bool
			// Not ticked: Close delivers the call.
			reactor.Call(r, echo, &testpb.EchoRequest{}, nil).
				Always(func() { tc.reenter(r) }).
				Always(func() { after = true })
			require.NoError(t, r.Close(closeCtx(t, bound)))
			require.True(t, after, "the next callback ran")
			require.Equal(t, []any{tc.want}, panics)
			require.ErrorIs(t, reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Err(), calls.ErrClosed)
		})
	}
}

// TestReenteredConcurrently checks the panic of a Tick or Close called while another
// goroutine is inside Tick.
func TestReenteredConcurrently(t *testing.T) {
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{})
	inside, hold, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() {
		close(inside)
		<-hold
	})
	go func() {
		defer close(done)
		for {
			select {
			case <-r.Ready():
				r.Tick(time.Second) // returns once the test releases the callback
			case <-inside:
				return
			}
		}
	}()
	recv(t, inside, "the other goroutine's Tick running the callback")
	require.Equal(t, closeConcurrent, panicValue(func() { _ = r.Close(context.Background()) }))
	require.Equal(t, tickConcurrent, panicValue(func() { r.Tick(time.Second) }))
	close(hold)
	<-done
	_, _, err := roundTrip(t, r, &testpb.EchoRequest{}, nil)
	require.NoError(t, err, "the refused Close closed the reactor")
}

// TestCloseInCallbackLogged checks what the default OnCallbackPanic logs when a callback calls
// Close: that the reactor is still open, and how to close it.
func TestCloseInCallbackLogged(t *testing.T) {
	var log syncBuffer
	logger := slog.New(slog.NewTextHandler(&log, nil))
	r := reactortest.NewReactor(t, echoBackend(), reactor.Config{Logger: logger})
	reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { _ = r.Close(context.Background()) })
	reactortest.Flush(t, r)
	require.Contains(t, log.String(), `level=ERROR msg="prpc: promise callback panicked" panic="`+closeInTickCallback+`"`)
	_, _, err := roundTrip(t, r, &testpb.EchoRequest{}, nil)
	require.NoError(t, err, "the refused Close closed the reactor")
}
