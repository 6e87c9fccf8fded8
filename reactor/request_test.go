package reactor_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// TestRequestEncodedOnTheLane checks what Call's ownership of the request means: a request that
// does not encode fails at a later Tick, never sent, and once a call has settled its request is
// the caller's again.
func TestRequestEncodedOnTheLane(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})

	t.Run("encoding failure", func(t *testing.T) {
		before := srv.Calls()
		// proto3 string fields must hold valid UTF-8.
		p := reactor.Call(r, echo, &testpb.EchoRequest{Message: "\xff"}, nil)
		require.NoError(t, p.Err(), "the request is encoded on a lane, after Call returns")
		waitFor(t, r, func() bool { return p.State() != calls.Pending })
		err := p.Err()
		require.ErrorIs(t, err, calls.ErrInvalidArgument)
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		require.EqualError(t, err, "prpc: /prpctest.TestService/Echo: InvalidArgument: encoding the request: string field prpctest.EchoRequest.message contains invalid UTF-8")
		require.NotNil(t, errors.Unwrap(err), "the encoder's error is the cause")
		require.Equal(t, before, srv.Calls(), "never sent")
	})

	t.Run("the caller's again once settled", func(t *testing.T) {
		req := &testpb.EchoRequest{Message: "first", Payload: []byte("abc")}
		var got []string
		var resend func(*testpb.EchoResponse)
		resend = func(resp *testpb.EchoResponse) {
			got = append(got, resp.GetMessage())
			if len(got) < 3 {
				req.Message = fmt.Sprint("call ", len(got)+1) // the same request, changed once settled
				reactor.Call(r, echo, req, nil).Then(resend)
			}
		}
		reactor.Call(r, echo, req, nil).Then(resend)
		waitFor(t, r, func() bool { return len(got) == 3 })
		require.Equal(t, []string{"first", "call 2", "call 3"}, got)
	})

	t.Run("one request shared by several calls", func(t *testing.T) {
		req := &testpb.EchoRequest{Message: "shared"}
		done := 0
		for range 50 {
			reactor.Call(r, echo, req, nil).Then(func(resp *testpb.EchoResponse) {
				require.Equal(t, "shared", resp.GetMessage())
				done++
			})
		}
		waitFor(t, r, func() bool { return done == 50 })
	})
}

// TestRequestFreeOnceSettled checks, under -race, that no lane reads a request after its call
// has settled, however it settled: the callbacks of calls that time out or are cancelled while
// their lanes run them (sent, or still being encoded) write to the request at once, and the
// race detector would report a lane still encoding it.
func TestRequestFreeOnceSettled(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Workers: 4, BatchSize: 16})
	h := newHost(t, r)
	const n = 512
	done := 0
	for i := range n {
		req := &testpb.EchoRequest{Block: true, Payload: bytes.Repeat([]byte{byte(i)}, 1+i%4096)}
		opts := &calls.Options{Timeout: time.Duration(1+i%4) * time.Millisecond}
		p := reactor.Call(r, echo, req, opts).Always(func() {
			req.Message = "changed once settled"
			req.Payload[0]++
			done++
		})
		if i%3 == 0 {
			p.Cancel()
		}
		if i%64 == 63 {
			h.waitFor(func() bool { return done == i+1 })
		}
	}
	h.waitFor(func() bool { return done == n })
}

// TestRequestBufferOutlivesFailedCall checks, under -race, that a failed call's request
// buffer is not reused too early: a call that times out (or is cancelled) can return from
// ClientConn.Invoke while gRPC's writer goroutine still reads the request's bytes, so its
// pooled encode buffer must not be handed to the next Call's encoder. Many short timeouts
// against a blocked handler, with 16 KiB requests, 256 in flight, make early returns common,
// so the race detector sees any such reuse.
func TestRequestBufferOutlivesFailedCall(t *testing.T) {
	srv := testserver.Start(t)
	// Without the adaptive limit, which would keep most of these calls, all timing out, in
	// prpc's queue: the test needs them sent.
	r := newReactor(t, srv, reactor.Config{Workers: 4, BatchSize: 64, AdaptiveLimit: &reactor.AdaptiveLimit{Disabled: true}})
	h := newHost(t, r)
	const n, batch = 1024, 256
	done := 0
	for i := range n {
		req := &testpb.EchoRequest{Block: true, Payload: bytes.Repeat([]byte{byte(i)}, 16<<10)}
		reactor.Call(r, echo, req, &calls.Options{Timeout: time.Duration(1+i%5) * time.Millisecond}).
			Always(func() { done++ })
		if i%batch == batch-1 {
			h.waitFor(func() bool { return done == i+1 })
		}
	}
	require.EqualValues(t, n, r.Stats().TimedOut)
}
