package reactor_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
)

// lateBound bounds how late after its deadline a call on the real clock may settle,
// delivery included (requireDeadlines). The reactor's timer fires at the deadline and the
// settlement reaches the host with one channel wake-up, which takes microseconds; but on
// a loaded machine, under -race, the process itself can be off the CPU for tens of
// milliseconds when a deadline passes. The bound is generous for that, and still fails a
// deadline that waits for something else (a response, a reconnect). Deadline precision
// is proven exactly on a manual clock, by TestFaultDeadlinesManualClock and
// TestTimeoutRules.
const lateBound = 500 * time.Millisecond

// call is one call submitted or tracked through a host, with what its callbacks saw.
type call struct {
	seq       int
	id        string // the request's Message
	p         *echoPromise
	submitted time.Time     // real time just before Call
	timeout   time.Duration // Options.Timeout as submitted
	rejected  bool          // Failed already when Call returned

	// Written by the callbacks, on the host goroutine.
	thens, errs, always int
	resp                *testpb.EchoResponse
	err                 error
	settled             time.Time // real time its callbacks had run: an upper bound of settlement
	order               int       // 1-based position in delivery order; 0 while undelivered
}

// done reports whether the call's callbacks have run.
func (c *call) done() bool { return c.always > 0 }

// settledOnce reports whether the call's callbacks ran exactly once: Then or OnError, as its
// outcome says, then Always.
func (c *call) settledOnce() bool {
	return c.thens+c.errs == 1 && c.always == 1 && (c.err == nil) == (c.thens == 1)
}

// latency is the time from submission to delivery, an upper bound of the time to settlement.
func (c *call) latency() time.Duration { return c.settled.Sub(c.submitted) }

// code is the gRPC code of the outcome: OK on success.
func (c *call) code() codes.Code { return status.Code(c.err) }

func (c *call) String() string {
	return fmt.Sprintf("call %d (%s): thens %d, errs %d, always %d, err %v", c.seq, c.id, c.thens, c.errs, c.always, c.err)
}

// echoReq returns an Echo request whose Message is id.
func echoReq(id string) *testpb.EchoRequest { return &testpb.EchoRequest{Message: id} }

// submit calls m with req and opts and tracks the call.
func (h *host) submit(m echoMethod, req *testpb.EchoRequest, opts *calls.Options) *call {
	submitted := time.Now()
	c := h.track(req.GetMessage(), reactor.Call(h.r, m, req, opts))
	c.submitted = submitted
	if opts != nil {
		c.timeout = opts.Timeout
	}
	return c
}

// track records p under id and registers the callbacks that record its outcome: Then,
// OnError, Always, in that order.
func (h *host) track(id string, p *echoPromise) *call {
	c := &call{seq: len(h.calls), id: id, p: p, submitted: time.Now(), rejected: p.State() == calls.Failed}
	h.calls = append(h.calls, c)
	p.Then(func(resp *testpb.EchoResponse) {
		c.thens++
		c.resp = resp
	}).OnError(func(err error) {
		c.errs++
		c.err = err
	}).Always(func() {
		c.always++
		if c.always == 1 {
			c.settled = time.Now()
			h.delivered++
			c.order = h.delivered
			h.stamps = append(h.stamps, c.settled)
		}
	})
	return c
}

// outstanding is the number of tracked calls not yet delivered.
func (h *host) outstanding() int { return len(h.calls) - h.delivered }

// settle ticks until every call in cs (every tracked call if cs is empty) has run its
// callbacks, and checks that each ran them exactly once.
func (h *host) settle(cs ...*call) {
	h.t.Helper()
	if len(cs) == 0 {
		cs = h.calls
	}
	next := 0
	h.pollFor(fmt.Sprintf("%d calls settled", len(cs)), func() bool {
		for next < len(cs) && cs[next].done() {
			next++
		}
		return next == len(cs)
	})
	for _, c := range cs {
		require.True(h.t, c.settledOnce(), "not settled exactly once: %v", c)
	}
}

// burst submits n Echo calls whose Messages are prefix0, prefix1, …, keeping at most window
// of them outstanding, and ticks until all have settled, each exactly once. The window keeps
// each call's wait for a free lane far below its timeout.
func (h *host) burst(prefix string, n, window int) []*call {
	h.t.Helper()
	var cs []*call
	settled := 0
	tickUntil(h.t, h.r, h.bound, false, "burst "+prefix, func() { h.Tick(h.budget) }, func() bool {
		for len(cs) < n && len(cs)-settled < window {
			c := h.submit(echo, echoReq(prefix+strconv.Itoa(len(cs))), nil)
			c.p.Always(func() { settled++ })
			cs = append(cs, c)
		}
		return settled == n
	})
	for _, c := range cs {
		require.True(h.t, c.settledOnce(), "not settled exactly once: %v", c)
	}
	return cs
}

// requireSettledOnce reports every tracked call that did not settle exactly once. It does not
// stop the test, so that it can run in a cleanup.
func (h *host) requireSettledOnce() {
	t := h.t
	t.Helper()
	bad := 0
	for _, c := range h.calls {
		if !c.settledOnce() {
			if bad < 10 {
				t.Errorf("not settled exactly once: %v", c)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d calls not settled exactly once", bad, len(h.calls))
	}
}

// requireEchoed checks that every call in cs succeeded with its own echo.
func requireEchoed(t testing.TB, cs []*call) {
	t.Helper()
	for _, c := range cs {
		require.NoError(t, c.err, "call %s", c.id)
		require.Equal(t, c.id, c.resp.GetMessage(), "call %s got another call's response", c.id)
	}
}

// requireDeadlines checks that each call in cs, all submitted with an Options.Timeout, failed
// with ErrTimeout (DeadlineExceeded) no earlier than its timeout after submission and at most
// lateBound after it, and logs the worst lateness.
func requireDeadlines(t testing.TB, what string, cs []*call) {
	t.Helper()
	var worst time.Duration
	for _, c := range cs {
		require.ErrorIs(t, c.err, calls.ErrTimeout, "call %d", c.seq)
		require.Equal(t, codes.DeadlineExceeded, c.code())
		// submitted is read before Call, and the deadline is counted from inside Call, so a
		// call settled at its deadline has a latency of at least its timeout.
		d := c.timeout
		require.Positive(t, d, "call %d was submitted without a timeout", c.seq)
		require.GreaterOrEqual(t, c.latency(), d, "call %d settled before its deadline", c.seq)
		worst = max(worst, c.latency()-d)
	}
	t.Logf("%s: %d calls, worst settlement %v after the deadline (bound %v); sample %v", what, len(cs), worst, lateBound, cs[0].err)
	require.LessOrEqual(t, worst, lateBound)
}

// tally counts the calls by outcome code and keeps one sample error per code.
func tally(cs []*call) (byCode map[codes.Code]int, sample map[codes.Code]error) {
	byCode, sample = map[codes.Code]int{}, map[codes.Code]error{}
	for _, c := range cs {
		code := c.code()
		byCode[code]++
		if _, ok := sample[code]; !ok {
			sample[code] = c.err
		}
	}
	return byCode, sample
}

// callbackLog records the names of callbacks, which all run on the Tick goroutine, and
// whether each ran there.
type callbackLog struct {
	h       *host
	ran     []string
	offHost []string
}

func (l *callbackLog) note(name string) {
	l.ran = append(l.ran, name)
	if !l.h.onHost() {
		l.offHost = append(l.offHost, name)
	}
}

// attach registers, in this order, Then, OnError, Always, Then, OnError, Always, each noting
// its name with a prefix. More than two callbacks also exercise the promise's overflow list.
func (l *callbackLog) attach(p *echoPromise, prefix string) {
	p.Then(func(*testpb.EchoResponse) { l.note(prefix + "then1") }).
		OnError(func(error) { l.note(prefix + "error1") }).
		Always(func() { l.note(prefix + "always1") }).
		Then(func(*testpb.EchoResponse) { l.note(prefix + "then2") }).
		OnError(func(error) { l.note(prefix + "error2") }).
		Always(func() { l.note(prefix + "always2") })
}
