package reactor_test

import (
	"fmt"
	"time"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// Identical reads made in one tick share one transport call: here, ten players ask for the
// same thing at once. (How many join depends on how fast the backend answers the first, so
// the example prints what Stats says without a fixed output.)
func ExampleMethodPolicy_coalesce() {
	r, stop := exampleReactor(reactor.Config{Policies: []reactor.MethodPolicy{
		{Method: exampleEcho, Idempotent: true, Coalesce: true},
	}})
	defer stop()

	pending := 10
	for range 10 {
		reactor.Go(r, exampleEcho, &testpb.EchoRequest{Message: "leaderboard"}, nil, func(*testpb.EchoResponse, error) { pending-- })
	}
	for pending > 0 {
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	s := r.Stats().Methods[exampleEcho.Path()]
	fmt.Println("calls:", s.Succeeded, "joined another's transport call:", s.Coalesced)
}

// A hedged read sends a second attempt when the first has had no answer after the delay;
// the first answer wins. Here the backend answers at once, so no hedge is sent.
func ExampleHedgePolicy() {
	r, stop := exampleReactor(reactor.Config{Policies: []reactor.MethodPolicy{
		{Method: exampleEcho, Idempotent: true, Hedge: &reactor.HedgePolicy{
			Delay:       50 * time.Millisecond, // or DelayQuantile: 0.95, from recent latencies
			MaxAttempts: 2,
		}},
	}})
	defer stop()

	done := false
	reactor.Go(r, exampleEcho, &testpb.EchoRequest{Message: "player"}, nil, func(resp *testpb.EchoResponse, err error) {
		fmt.Println(resp.GetMessage(), err)
		done = true
	})
	for !done {
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	s := r.Stats().Methods[exampleEcho.Path()]
	fmt.Println("hedges:", s.Hedges)
	// Output:
	// echo: player <nil>
	// hedges: 0
}

// The adaptive limit is on by default: it starts at Workers × BatchSize and shrinks while the
// backend drops calls, or queues them close to their deadlines. Disabled turns it off.
func ExampleAdaptiveLimit() {
	r, stop := exampleReactor(reactor.Config{Workers: 2, BatchSize: 4})
	defer stop()
	fmt.Println("limit:", r.Stats().InFlightLimit)

	off, stopOff := exampleReactor(reactor.Config{Workers: 2, BatchSize: 4, AdaptiveLimit: &reactor.AdaptiveLimit{Disabled: true}})
	defer stopOff()
	fmt.Println("disabled:", off.Stats().InFlightLimit)
	// Output:
	// limit: 8
	// disabled: 0
}
