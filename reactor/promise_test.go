package reactor_test

import (
	"runtime"
	"testing"
	"time"
	"weak"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

func TestCallbacksRunOnlyInsideTick(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	log := &callbackLog{h: h}

	// Rejected at once: the failure is visible, the callbacks wait for Tick.
	rejected := reactor.Call(r, echo, nil, nil)
	require.ErrorIs(t, rejected.Err(), calls.ErrInvalidArgument)
	log.attach(rejected, "")
	require.Empty(t, log.ran, "callbacks ran inside Then, OnError or Always")
	// The rejection has reached the delivery queue; still nothing runs without Tick.
	recv(t, r.Ready(), "a wake-up for the rejected call")
	require.Empty(t, log.ran)
	h.Tick(time.Second)
	require.Equal(t, []string{"error1", "always1", "error2", "always2"}, log.ran)

	// A call that succeeds; callbacks attached to it from its own callback run at the next
	// Tick, not in the current one.
	log.ran = nil
	p := reactor.Call(r, echo, &testpb.EchoRequest{Message: "x"}, nil)
	log.attach(p, "")
	p.Always(func() { log.attach(p, "inner-") })
	h.waitFor(func() bool { return len(log.ran) > 0 })
	require.Equal(t, []string{"then1", "always1", "then2", "always2"}, log.ran)
	h.waitFor(func() bool { return len(log.ran) > 4 })
	require.Equal(t, []string{"then1", "always1", "then2", "always2", "inner-then1", "inner-always1", "inner-then2", "inner-always2"}, log.ran)

	// Attached after delivery, from outside any Tick: not run inside Then/Always, signalled
	// on Ready, run at the next Tick, once.
	log.ran = nil
	log.attach(p, "late-")
	require.Empty(t, log.ran, "callbacks ran inside Then, OnError or Always")
	recv(t, r.Ready(), "a wake-up for callbacks attached after delivery")
	require.Equal(t, 1, h.Tick(time.Second).Delivered)
	require.Equal(t, []string{"late-then1", "late-always1", "late-then2", "late-always2"}, log.ran)
	require.Equal(t, reactor.TickReport{}, h.Tick(time.Second), "each callback runs once")
	require.Empty(t, log.offHost, "callbacks ran off the Tick goroutine")
}

func TestCallbacksRunInRegistrationOrderExactlyOnce(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	h := newHost(t, r)
	tests := []struct {
		name string
		req  *testpb.EchoRequest
		want []string
	}{
		{"success", &testpb.EchoRequest{Message: "x"}, []string{"then1", "always1", "then2", "always2"}},
		{"server error", &testpb.EchoRequest{FailCode: int32(codes.NotFound)}, []string{"error1", "always1", "error2", "always2"}},
		{"rejected", nil, []string{"error1", "always1", "error2", "always2"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			log := &callbackLog{h: h}
			var done bool
			p := reactor.Call(r, echo, tc.req, nil)
			log.attach(p, "")
			p.Always(func() { done = true })
			h.waitFor(func() bool { return done })
			require.Equal(t, tc.want, log.ran)
			// Later Ticks, and completions of other calls, run nothing again.
			var other bool
			reactor.Call(r, echo, &testpb.EchoRequest{}, nil).Always(func() { other = true })
			h.waitFor(func() bool { return other })
			h.Tick(time.Second)
			require.Equal(t, tc.want, log.ran)
			require.Empty(t, log.offHost)
		})
	}
}

// probe is what the callbacks of TestPromiseDropsCallbacksOnceRun capture. It holds a pointer
// field, so it is not a tiny (pointer-free) allocation sharing its memory block with others,
// which would keep a weak pointer to it alive.
type probe struct {
	hits int
	_    *probe
}

// attachProbes registers three callbacks on p, each capturing its own probe, and returns weak
// pointers to the probes. It is not inlined, so no strong reference stays on the test's stack.
//
//go:noinline
func attachProbes(p *echoPromise) []weak.Pointer[probe] {
	a, b, c := &probe{}, &probe{}, &probe{}
	p.Then(func(*testpb.EchoResponse) { a.hits++ }).
		OnError(func(error) { b.hits++ }). // never runs on success, and must be dropped too
		Always(func() { c.hits++ })
	return []weak.Pointer[probe]{weak.Make(a), weak.Make(b), weak.Make(c)}
}

func TestPromiseDropsCallbacksOnceRun(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  *testpb.EchoRequest
	}{{"delivered", &testpb.EchoRequest{}}, {"rejected", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			srv := testserver.Start(t)
			r := newReactor(t, srv, reactor.Config{})
			h := newHost(t, r)

			p := reactor.Call(r, echo, tc.req, nil)
			probes := attachProbes(p)
			var done bool
			p.Always(func() { done = true })
			runtime.GC()
			for i, w := range probes {
				require.NotNil(t, w.Value(), "probe %d collected while its callback was pending", i)
			}

			h.waitFor(func() bool { return done })
			// One full GC clears weak pointers to unreachable objects; a few more absorb
			// anything the runtime keeps for a cycle.
			collected := func() bool {
				for _, w := range probes {
					if w.Value() != nil {
						return false
					}
				}
				return true
			}
			for i := 0; i < 10 && !collected(); i++ {
				runtime.GC()
			}
			require.True(t, collected(), "the promise still references callbacks that ran")
			runtime.KeepAlive(p) // the promise itself stays reachable throughout
		})
	}
}
