package reactor_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// admitted submits a call and reports whether it was admitted: a rejected call is Failed when
// Call returns, an admitted one Pending (the handler blocks and nobody ticks, so it stays
// outstanding).
func admitted(t *testing.T, h *host, m echoMethod, id string, opts *calls.Options) (bool, error) {
	t.Helper()
	p := h.submit(m, echoReq(id), opts).p
	switch p.State() {
	case calls.Pending:
		return true, nil
	case calls.Failed:
		return false, p.Err()
	}
	t.Fatalf("call %s is %v at submission", id, p.State())
	return false, nil
}

// requireOverloaded checks err is the ErrOverloaded rejection whose message contains want.
func requireOverloaded(t *testing.T, err error, want string) {
	t.Helper()
	require.ErrorIs(t, err, calls.ErrOverloaded)
	require.Equal(t, codes.ResourceExhausted, status.Code(err))
	require.Contains(t, err.Error(), want)
}

// TestCriticalReserve checks that critical calls (per call or per method) may use the
// share of MaxOutstanding that CriticalReserve keeps from ordinary calls, and no more.
func TestCriticalReserve(t *testing.T) {
	release := make(chan struct{})
	releaseAll := sync.OnceFunc(func() { close(release) })
	srv := startBoth(t, hold(release, nil))
	r := newReactor(t, srv, reactor.Config{
		MaxOutstanding:  20,
		CriticalReserve: 5,
		Policies:        []reactor.MethodPolicy{{Method: echoOther, Critical: true}},
		DefaultTimeout:  5 * time.Second, // the phase below takes milliseconds; the calls must not time out before release
	})
	t.Cleanup(releaseAll) // before Close, if the test fails early
	h := newHost(t, r)
	for i := range 15 {
		ok, err := admitted(t, h, echo, "ordinary"+strconv.Itoa(i), nil)
		require.True(t, ok, "ordinary call %d of 15: %v", i, err)
	}
	ok, err := admitted(t, h, echo, "ordinary15", nil)
	require.False(t, ok, "the 16th ordinary call is admitted")
	requireOverloaded(t, err, "CriticalReserve 5")

	// Critical calls use the reserve: 3 by their options, 2 by their method's policy.
	for i := range 3 {
		ok, err := admitted(t, h, echo, "critical"+strconv.Itoa(i), &calls.Options{Critical: true})
		require.True(t, ok, "critical call %d: %v", i, err)
	}
	for i := range 2 {
		ok, err := admitted(t, h, echoOther, "policy"+strconv.Itoa(i), nil)
		require.True(t, ok, "call %d of a critical method: %v", i, err)
	}
	waitPending(t, r, 20)
	for _, c := range []struct {
		m    echoMethod
		opts *calls.Options
		msg  string
	}{
		{echo, &calls.Options{Critical: true}, "including the 5 reserved for critical calls"},
		{echoOther, nil, "including the 5 reserved for critical calls"},
		{echo, nil, "CriticalReserve 5"},
	} {
		ok, err := admitted(t, h, c.m, "beyond", c.opts)
		require.False(t, ok, "a call beyond MaxOutstanding is admitted")
		requireOverloaded(t, err, c.msg)
	}

	releaseAll()
	h.settle()
	rejected := 0
	for _, o := range h.calls {
		if o.err != nil {
			require.ErrorIs(t, o.err, calls.ErrOverloaded, "call %s", o.id)
			rejected++
			continue
		}
		require.Equal(t, o.id, o.resp.GetMessage())
	}
	require.Equal(t, 4, rejected)
	s := r.Stats()
	require.EqualValues(t, 4, s.Overloaded)
	require.EqualValues(t, 20, s.Succeeded)
}

// TestCriticalReserveDefault checks CriticalReserve's default: 10% of MaxOutstanding
// when a method policy is Critical, none otherwise or with None. A critical call rejected with
// no reserve is told that CriticalReserve is zero, never left to guess why Critical did not
// help; a critical call with room is never rejected.
func TestCriticalReserveDefault(t *testing.T) {
	srv := testserver.Start(t)
	critical := []reactor.MethodPolicy{{Method: echoOther, Critical: true}}
	for _, tc := range []struct {
		name     string
		policies []reactor.MethodPolicy
		reserve  int
		ordinary int    // ordinary calls admitted of MaxOutstanding 100
		beyond   string // in the error of a critical call beyond MaxOutstanding
	}{
		{"critical policy", critical, 0, 90, "including the 10 reserved for critical calls"},
		{"no critical policy", nil, 0, 100, "Config.CriticalReserve is 0"},
		{"critical policy, reserve None", critical, reactor.None, 100, "Config.CriticalReserve is 0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			releaseAll := sync.OnceFunc(func() { close(release) })
			srv.SetHandler(hold(release, nil))
			r := newReactor(t, srv, reactor.Config{
				MaxOutstanding:  100,
				Policies:        tc.policies,
				CriticalReserve: tc.reserve,
				DefaultTimeout:  5 * time.Second,
			})
			t.Cleanup(releaseAll) // before Close, if the test fails early
			h := newHost(t, r)
			for i := range tc.ordinary {
				ok, err := admitted(t, h, echo, "ordinary"+strconv.Itoa(i), nil)
				require.True(t, ok, "ordinary call %d of %d: %v", i, tc.ordinary, err)
			}
			ok, err := admitted(t, h, echo, "one more", nil)
			require.False(t, ok, "ordinary call %d is admitted", tc.ordinary+1)
			require.ErrorIs(t, err, calls.ErrOverloaded)
			for i := tc.ordinary; i < 100; i++ {
				ok, err := admitted(t, h, echo, "critical"+strconv.Itoa(i), &calls.Options{Critical: true})
				require.True(t, ok, "critical call %d: %v", i, err)
			}
			ok, err = admitted(t, h, echo, "critical beyond", &calls.Options{Critical: true})
			require.False(t, ok, "critical call 101 is admitted")
			requireOverloaded(t, err, "the MaxOutstanding limit")
			requireOverloaded(t, err, tc.beyond)
			waitPending(t, r, 100)

			releaseAll()
			h.settle()
			for _, o := range h.calls {
				if o.id == "one more" || o.id == "critical beyond" {
					require.ErrorIs(t, o.err, calls.ErrOverloaded)
					continue
				}
				require.NoError(t, o.err, "call %s", o.id)
			}
		})
	}
}

// TestCriticalCallsGoFirst checks that a lane takes every waiting critical call before any
// waiting call that is not, and each class in submission order: with the one lane busy, calls
// of both classes queue up, and the server sees them, once the lane frees, critical first.
func TestCriticalCallsGoFirst(t *testing.T) {
	r, g, h := startGated(t, reactor.Config{Workers: 1, BatchSize: 1})
	busy := h.submit(echo, held("busy"), nil)
	g.waitEntered(t, 1)
	queued := []struct {
		id       string
		critical bool
	}{{"n1", false}, {"c1", true}, {"n2", false}, {"c2", true}, {"n3", false}, {"c3", true}}
	for _, q := range queued {
		h.submit(echo, echoReq(q.id), &calls.Options{Critical: q.critical})
	}
	h.pollFor("every call queued for the lane", func() bool { return r.Stats().Queued == len(queued) })
	g.release("busy")
	h.settle()
	require.NoError(t, busy.err)
	require.Equal(t, []string{"busy", "c1", "c2", "c3", "n1", "n2", "n3"}, g.seenMessages())
}
