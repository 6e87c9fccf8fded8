package reactor_test

import (
	"bytes"
	"errors"
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

func TestRequestEncodedOnce(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})

	t.Run("encoding failure", func(t *testing.T) {
		before := srv.Calls()
		// proto3 string fields must hold valid UTF-8.
		p, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "\xff"}, nil)
		require.Nil(t, resp)
		require.ErrorIs(t, err, calls.ErrInvalidArgument)
		require.Equal(t, codes.InvalidArgument, status.Code(err))
		require.Contains(t, err.Error(), "encoding")
		require.NotNil(t, errors.Unwrap(err), "the encoder's error is the cause")
		require.Equal(t, calls.Failed, p.State())
		require.Equal(t, before, srv.Calls())
	})

	t.Run("later changes are not sent", func(t *testing.T) {
		req := &testpb.EchoRequest{Message: "as submitted", Payload: []byte("abc")}
		var resp *testpb.EchoResponse
		p := reactor.Call(r, echo, req, nil).Then(func(v *testpb.EchoResponse) { resp = v })
		req.Message = "changed"
		req.Payload[0] = 'X'
		waitFor(t, r, func() bool { return p.State() != calls.Pending })
		require.NoError(t, p.Err())
		require.Equal(t, "as submitted", resp.GetMessage())
		require.Equal(t, []byte("abc"), resp.GetPayload())
	})
}

// TestRequestBufferOutlivesFailedCall checks, under -race, that a failed call's request
// buffer is not reused too early: a call that times out (or is cancelled) can return from
// ClientConn.Invoke while gRPC's writer goroutine still reads the request's bytes, so its
// pooled encode buffer must not be handed to the next Call's encoder. Many short timeouts
// against a blocked handler, with 16 KiB requests, 256 in flight, make early returns common,
// so the race detector sees any such reuse.
func TestRequestBufferOutlivesFailedCall(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Workers: 4, BatchSize: 64})
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
