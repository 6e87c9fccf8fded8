package otelprpc_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/metrics/otelprpc"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// watch is a stream method of the tests' service: its handler sends req's count of
// messages, or, for a count of zero, messages until the client goes.
var watch = calls.MustStreamMethod[*wrapperspb.Int64Value, *wrapperspb.StringValue]("/game.Inventory/Watch")

// TestStreamMetrics collects the streams' metrics of two streams on an in-memory backend:
// one kept-latest whose host has not ticked (three messages received, two replaced, one
// waiting), one whose ring of two is full (a stall) and that is cancelled (its two messages
// discarded); then both ends, OK and Canceled. A stream method has none of the calls'
// metrics.
func TestStreamMetrics(t *testing.T) {
	b := reactortest.NewBackend()
	reactortest.HandleStream(b, watch, func(ctx context.Context, req *wrapperspb.Int64Value, send func(*wrapperspb.StringValue) error) error {
		for i := int64(0); req.GetValue() == 0 || i < req.GetValue(); i++ {
			if err := send(wrapperspb.String("m")); err != nil {
				return err
			}
		}
		return nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{Clock: reactortest.NewManualClock(epoch)})
	p := otelprpc.NewProducer(otelprpc.WithReactor(r))
	reader := newReader(t, p)
	ends := 0
	h := calls.StreamHandler[*wrapperspb.Int64Value, *wrapperspb.StringValue]{
		OnMessage: func(*wrapperspb.StringValue) {},
		OnEnd:     func(error) { ends++ },
	}
	reactor.Watch(r, watch, wrapperspb.Int64(3), &calls.StreamOptions{KeepLatest: true}, h)
	forever := reactor.Watch(r, watch, wrapperspb.Int64(0), &calls.StreamOptions{MaxWaiting: 2}, h)
	require.Eventually(t, func() bool {
		s := r.Stats().Methods["/game.Inventory/Watch"].Streams
		return s.Received == 5 && s.Stalls == 1
	}, patience, time.Millisecond, "three messages for the kept-latest stream, two for the other, whose ring is then full")

	m := methodAttrs("Watch")
	outcome := func(o string) string {
		s := methodAttrs("Watch", attribute.String("outcome", o))
		return s.Encoded(attribute.DefaultEncoder())
	}
	check := func(open, waiting float64, delivered, discarded int64, ended map[int64]int64) {
		t.Helper()
		got := collect(t, reader)
		requireSpec(t, got, streamSpec, "")
		require.Equal(t, open, gauge(t, got["prpc.streams.open"], m))
		require.Equal(t, waiting, gauge(t, got["prpc.stream.messages_waiting"], m))
		require.Equal(t, map[string]int64{
			outcome("received"):  5,
			outcome("delivered"): delivered,
			outcome("replaced"):  2,
			outcome("discarded"): discarded,
		}, counters(t, got["prpc.stream.messages"]))
		require.Equal(t, int64(1), counterValue(t, got["prpc.stream.stalls"], m))
		require.Equal(t, int64(0), counterValue(t, got["prpc.stream.reopens"], m))
		want := map[string]int64{}
		for code, n := range ended {
			s := withCode("Watch", code)
			want[s.Encoded(attribute.DefaultEncoder())] = n
		}
		require.Equal(t, want, counters(t, got["prpc.stream.ends"]))
		for _, name := range []string{"prpc.call.submitted", "prpc.call.completed", "prpc.call.duration"} {
			require.NotContains(t, got, name, "no call was made")
		}
	}
	check(2, 3, 0, 0, map[int64]int64{0: 0})

	forever.Cancel()
	for ends < 2 {
		select {
		case <-r.Ready():
		case <-time.After(patience):
			t.Fatal("the ends are not delivered")
		}
		r.Tick(time.Second)
	}
	check(0, 0, 1, 2, map[int64]int64{0: 1, int64(codes.Canceled): 1})
}
