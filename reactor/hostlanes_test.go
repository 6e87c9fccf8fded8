package reactor_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// stuckHook is a hook of the host that runs on an invoker lane and, for the request whose
// Message is "stuck", ignores its context and blocks until the test releases it: it counts
// the calls it held and the ones that returned after the release.
type stuckHook struct {
	release  chan struct{}
	entered  chan struct{} // receives a value when the stuck call enters the hook
	once     sync.Once
	returned atomic.Int32
}

func newStuckHook() *stuckHook {
	return &stuckHook{release: make(chan struct{}), entered: make(chan struct{}, 1)}
}

// hold blocks if req is the stuck request, and reports whether it did.
func (s *stuckHook) hold(req any) bool {
	if m, ok := req.(*testpb.EchoRequest); !ok || m.GetMessage() != "stuck" {
		return false
	}
	s.entered <- struct{}{}
	<-s.release // the context is ignored, as the hook of a careless host does
	s.returned.Add(1)
	return true
}

func (s *stuckHook) unblock() { s.once.Do(func() { close(s.release) }) }

// stuckConn is a Config.Conn whose Invoke echoes, as recordingConn does, but holds the stuck
// request whatever its context says.
type stuckConn struct {
	recordingConn
	hook *stuckHook
}

func (c *stuckConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	if c.hook.hold(args) {
		return errors.New("stuckConn: released")
	}
	return c.recordingConn.Invoke(ctx, method, args, reply, opts...)
}

// TestCloseReturnsWhileALaneIsStuckInAHook checks that Shutdown and Close return by their
// context's deadline, plus the lanes' grace, when an invoker lane is stuck inside a hook of
// the host that ignores its context (a unary interceptor in Config.DialOptions, or
// Config.Conn's Invoke): every call's callback runs exactly once, the stuck call's with
// ErrClosed, the error matches ErrHookBlocked and the context's error and names the lane,
// and once the hook returns, the lane exits without delivering anything again. With a
// context without deadline, Close gives up on the lane after MaxTimeout and the grace, and
// the stuck call, which timed out, gets ErrTimeout.
func TestCloseReturnsWhileALaneIsStuckInAHook(t *testing.T) {
	hooks := []struct {
		name   string
		config func(t *testing.T, hook *stuckHook) (*testserver.Server, reactor.Config)
	}{
		{"interceptor", func(t *testing.T, hook *stuckHook) (*testserver.Server, reactor.Config) {
			interceptor := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
				hook.hold(req)
				return invoker(ctx, method, req, reply, cc, opts...)
			}
			return testserver.Start(t), reactor.Config{DialOptions: []grpc.DialOption{grpc.WithUnaryInterceptor(interceptor)}}
		}},
		{"Conn", func(t *testing.T, hook *stuckHook) (*testserver.Server, reactor.Config) {
			return nil, reactor.Config{Conn: &stuckConn{hook: hook}}
		}},
	}
	closers := []struct {
		name       string
		noDeadline bool // Close with context.Background(), the calls' timeouts timeout
	}{{"Shutdown", false}, {"Close", false}, {"Close without deadline", true}}
	// The context's deadline (MaxTimeout, without one) is far above the time six calls take
	// on the other lane, even under -race on a busy machine. Close may take its grace for the
	// lanes on top of it, and slack for a loaded machine: slack is hundreds of times what a
	// turn of the reactor and a wake-up take.
	const timeout, slack = time.Second, 5 * time.Second
	for _, cl := range closers {
		closer := cl.name
		for _, hk := range hooks {
			t.Run(closer+"/"+hk.name, func(t *testing.T) {
				leakCheck(t)
				hook := newStuckHook()
				srv, cfg := hk.config(t, hook)
				cfg.Workers, cfg.BatchSize = 1, 2
				if cl.noDeadline {
					cfg.DefaultTimeout, cfg.MaxTimeout = timeout, timeout
				} else {
					cfg = longTimeouts(cfg)
				}
				r := newReactor(t, srv, cfg)
				// Registered after the reactor, so that it runs before the reactor's Close:
				// without the fix, that Close would wait for the stuck lane forever.
				t.Cleanup(hook.unblock)
				h := newHost(t, r)
				stuck := h.submit(echo, echoReq("stuck"), nil)
				recv(t, hook.entered, "the stuck call in the hook")
				var cs []*call
				for i := range 6 {
					cs = append(cs, h.submit(echo, echoReq("call "+strconv.Itoa(i)), nil))
				}
				if closer != "Shutdown" {
					h.settle(cs...) // served by the other lane; Close then has only the stuck call to cut
				}

				limit := timeout + reactor.LaneGrace + slack
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				defer cancel()
				if cl.noDeadline {
					ctx = context.Background()
				}
				took, err := h.stopWithin(closer, ctx, limit, hook.unblock) // with a lane stuck in the hook
				require.GreaterOrEqual(t, took, timeout, "returned before its context's deadline")
				require.ErrorIs(t, err, reactor.ErrHookBlocked)
				require.ErrorContains(t, err, "1 invoker lane had not returned")
				require.ErrorContains(t, err, "Config.DialOptions")
				require.ErrorContains(t, err, "Config.Conn")
				requireEchoed(t, cs)
				require.True(t, stuck.settledOnce(), "the stuck call: %v", stuck)
				s := r.Stats()
				require.Zero(t, s.InFlight, "Stats.InFlight after Close")
				require.Zero(t, s.Pending, "Stats.Pending after Close")
				if cl.noDeadline { // the stuck call timed out: nothing was left to cut off
					require.NotContains(t, err.Error(), "cut off")
					require.ErrorIs(t, stuck.err, calls.ErrTimeout)
					require.Zero(t, s.CutOff)
				} else {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					require.ErrorContains(t, err, "cut off 1 call")
					require.ErrorIs(t, stuck.err, calls.ErrClosed)
					require.ErrorIs(t, stuck.err, context.DeadlineExceeded)
					require.Equal(t, uint64(1), s.CutOff)
				}

				// The hook returns: the lane finishes with the call, which is delivered already,
				// and exits (leakCheck); nothing is delivered again, and Close's result stands.
				hook.unblock()
				require.Eventually(t, func() bool { return hook.returned.Load() == 1 }, bound, poll)
				require.Equal(t, err, h.Close(context.Background()))
				require.True(t, stuck.settledOnce(), "the stuck call, after the hook returned: %v", stuck)
				for _, c := range cs {
					require.True(t, c.settledOnce(), "not settled exactly once: %v", c)
				}
			})
		}
	}
}
