package reactor_test

import (
	"context"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// panicConn delegates to a real connection, except that its Invoke panics for requests whose
// Message is "panic".
type panicConn struct{ grpc.ClientConnInterface }

func (c panicConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if req, ok := args.(*testpb.EchoRequest); ok && req.GetMessage() == "panic" {
		panic("test invoker panic")
	}
	return c.ClientConnInterface.Invoke(ctx, method, args, reply, opts...)
}

func TestInvokerPanicFailsOnlyItsCall(t *testing.T) {
	srv := testserver.Start(t)
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cc.Close()) }) // after the reactor's Close
	var logs syncBuffer
	// One lane: if the panic killed it, every later call would hang.
	r := newReactor(t, srv, reactor.Config{
		Conn: panicConn{cc}, Workers: 1, BatchSize: 1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	h := newHost(t, r)

	msgs := []string{"before", "panic", "after1", "after2"}
	results := map[string]error{}
	submit := func(m string) {
		reactor.Call(r, echo, &testpb.EchoRequest{Message: m}, nil).
			Then(func(resp *testpb.EchoResponse) {
				require.Equal(t, m, resp.GetMessage())
				results[m] = nil
			}).
			OnError(func(err error) { results[m] = err })
	}
	for _, m := range msgs {
		submit(m)
	}
	h.waitFor(func() bool { return len(results) == len(msgs) })
	require.Equal(t, codes.Internal, status.Code(results["panic"]))
	require.Contains(t, results["panic"].Error(), "invoker panicked")
	for _, m := range []string{"before", "after1", "after2"} {
		require.NoError(t, results[m], m)
	}
	require.Contains(t, logs.String(), "invoker panicked")

	submit("later")
	h.waitFor(func() bool { _, ok := results["later"]; return ok })
	require.NoError(t, results["later"], "the reactor keeps serving")
	require.EqualValues(t, 1, r.Stats().Failed[codes.Internal])
}
