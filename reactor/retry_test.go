package reactor_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/resolver"
	"google.golang.org/grpc/resolver/manual"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

// flaky is a handler that fails the first failFirst[id] attempts of each request id (the
// request's message) with Unavailable, before sending any header, then succeeds; it counts
// the attempts per id.
type flaky struct {
	mu        sync.Mutex
	failFirst map[string]int
	attempts  map[string]int
}

func newFlaky() *flaky {
	return &flaky{failFirst: map[string]int{}, attempts: map[string]int{}}
}

// fail makes the first n attempts of id fail.
func (f *flaky) fail(id string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failFirst[id] = n
}

func (f *flaky) attemptsOf(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.attempts[id]
}

func (f *flaky) echo(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	id := req.GetMessage()
	f.mu.Lock()
	f.attempts[id]++
	failing := f.attempts[id] <= f.failFirst[id]
	f.mu.Unlock()
	if failing {
		return nil, status.Errorf(codes.Unavailable, "attempt of %s refused", id)
	}
	return &testpb.EchoResponse{Message: id}, nil
}

// TestRetries checks that calls of idempotent methods are retried as Config.Retry says
// and calls of other methods never are, counting attempts at the server.
func TestRetries(t *testing.T) {
	f := newFlaky()
	srv := startBoth(t, f.echo)
	r := newReactor(t, srv, reactor.Config{
		Policies: []reactor.MethodPolicy{{Method: echo, Idempotent: true}, {Method: echoOther}},
		Retry: reactor.RetryPolicy{
			MaxAttempts: 4, InitialBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond,
			// Throttling would stop retrying after a few failures (10 tokens, retries stop
			// below 5); this test counts attempts, so it keeps the throttle out of the way.
			ThrottleMaxTokens: 1000,
		},
		DefaultTimeout: 5 * time.Second, // ≥ 50× the retries' backoff (3 waits of ≤ 20 ms)
	})

	const each = 5
	h := newHost(t, r)
	type expect struct {
		attempts int
		code     codes.Code
	}
	want := map[string]expect{}
	for i := range each {
		id := "twice" + strconv.Itoa(i) // fails twice: succeeds at the 3rd attempt
		f.fail(id, 2)
		want[id] = expect{3, codes.OK}
		h.submit(echo, echoReq(id), nil)

		id = "always" + strconv.Itoa(i) // fails 4 times: out of attempts
		f.fail(id, 4)
		want[id] = expect{4, codes.Unavailable}
		h.submit(echo, echoReq(id), nil)

		id = "other" + strconv.Itoa(i) // a method that is not idempotent: never retried
		f.fail(id, 2)
		want[id] = expect{1, codes.Unavailable}
		h.submit(echoOther, echoReq(id), nil)
	}
	// grpc-go keeps at most 256 KiB of a call for retrying: a larger request is not retried
	// even for an idempotent method (RetryPolicy's documentation says so).
	for id, size := range map[string]int{"small": 200 << 10, "large": 300 << 10} {
		f.fail(id, 2)
		if size < 256<<10 {
			want[id] = expect{3, codes.OK}
		} else {
			want[id] = expect{1, codes.Unavailable}
		}
		h.submit(echo, &testpb.EchoRequest{Message: id, Payload: make([]byte, size)}, nil)
	}
	h.settle()
	for _, o := range h.calls {
		w := want[o.id]
		require.Equal(t, w.code, status.Code(o.err), "call %s: %v", o.id, o.err)
		require.Equal(t, w.attempts, f.attemptsOf(o.id), "attempts of call %s at the server", o.id)
	}
	m := r.Stats().Methods
	require.EqualValues(t, each+1, m[echo.Path()].Succeeded)
	require.Equal(t, map[codes.Code]uint64{codes.Unavailable: each + 1}, m[echo.Path()].Failed)
	require.Equal(t, map[codes.Code]uint64{codes.Unavailable: each}, m[echoOther.Path()].Failed)
}

// retryEchoConfig is a service config, as a resolver might publish it (in DNS TXT records,
// say), that retries Echo although no policy of the reactor marks it idempotent.
const retryEchoConfig = `{"methodConfig":[{"name":[{"service":"prpctest.TestService","method":"Echo"}],
	"retryPolicy":{"maxAttempts":4,"initialBackoff":"0.005s","maxBackoff":"0.020s","backoffMultiplier":2,
	"retryableStatusCodes":["UNAVAILABLE"]}}]}`

// TestServiceConfigLookup checks that a service config supplied by the name resolver is
// ignored unless Config.ServiceConfigLookup is set.
func TestServiceConfigLookup(t *testing.T) {
	f := newFlaky()
	srv := testserver.Start(t)
	srv.SetHandler(f.echo)
	for _, lookup := range []bool{false, true} {
		t.Run("lookup="+strconv.FormatBool(lookup), func(t *testing.T) {
			// A manual resolver (one per connection) that resolves to srv with a service
			// config retrying Echo; it can parse the config only once built.
			rb := manual.NewBuilderWithScheme("sctest")
			rb.BuildCallback = func(_ resolver.Target, cc resolver.ClientConn, _ resolver.BuildOptions) {
				sc := cc.ParseServiceConfig(retryEchoConfig)
				if sc.Err != nil {
					t.Errorf("parsing the service config: %v", sc.Err) // not FailNow: a gRPC goroutine may run this
				}
				rb.InitialState(resolver.State{Addresses: []resolver.Address{{Addr: srv.Addr()}}, ServiceConfig: sc})
			}
			r := newReactor(t, nil, reactor.Config{
				Target:              "sctest:///x",
				DialOptions:         []grpc.DialOption{grpc.WithResolvers(rb)},
				ServiceConfigLookup: lookup,
				DefaultTimeout:      5 * time.Second,
			})
			id := "lookup-" + strconv.FormatBool(lookup)
			f.fail(id, 2)
			h := newHost(t, r)
			o := h.submit(echo, echoReq(id), nil)
			h.settle()
			if lookup {
				require.NoError(t, o.err)
				require.Equal(t, 3, f.attemptsOf(id), "the resolver's service config retries Echo")
			} else {
				require.Equal(t, codes.Unavailable, status.Code(o.err), "%v", o.err)
				require.Equal(t, 1, f.attemptsOf(id), "the resolver's service config is ignored")
			}
		})
	}
}
