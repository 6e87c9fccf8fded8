package handpool

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/server"
	"github.com/trixnew/prpc/loop"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// patience bounds every wait of these tests, so that a bug fails them instead of hanging.
const patience = 10 * time.Second

var _ loop.Reactor = (*Pool[int, int])(nil)

var errOdd = errors.New("odd request")

// double is a call that answers req with 2·req, or fails odd requests with errOdd.
func double(_ context.Context, req int, _ ...grpc.CallOption) (int, error) {
	if req%2 == 1 {
		return 0, errOdd
	}
	return 2 * req, nil
}

// newPool returns a pool of call with cfg, closed when the test ends.
func newPool(t *testing.T, call func(context.Context, int, ...grpc.CallOption) (int, error), cfg Config) *Pool[int, int] {
	t.Helper()
	p, err := New(call, cfg)
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close(context.Background()) })
	return p
}

// waitReplies waits until n replies wait for Tick.
func waitReplies(t *testing.T, p *Pool[int, int], n int) {
	t.Helper()
	require.Eventually(t, func() bool { return p.Waiting() == n }, patience, time.Millisecond)
}

func TestNewValidates(t *testing.T) {
	ok := Config{Workers: 1, Capacity: 1, Timeout: time.Second}
	for _, c := range []struct {
		name string
		edit func(*Config)
		call func(context.Context, int, ...grpc.CallOption) (int, error)
		want string
	}{
		{"valid", func(*Config) {}, double, ""},
		{"no workers", func(c *Config) { c.Workers = 0 }, double, "handpool: Config.Workers is 0; must be more than 0"},
		{"negative capacity", func(c *Config) { c.Capacity = -1 }, double, "handpool: Config.Capacity is -1; must be more than 0"},
		{"no timeout", func(c *Config) { c.Timeout = 0 }, double, "handpool: Config.Timeout is 0s; must be more than 0"},
		{"nil call", func(*Config) {}, nil, "handpool: call is nil; pass the stub's method"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			p, err := New(c.call, cfg)
			if c.want == "" {
				require.NoError(t, err)
				require.NoError(t, p.Close(context.Background()))
				return
			}
			require.EqualError(t, err, c.want)
			require.Nil(t, p)
		})
	}
}

// Every call's callback runs once, in Tick, on Tick's goroutine, with its own reply or error.
func TestEveryCallbackRunsOnceInTick(t *testing.T) {
	const n = 200
	p := newPool(t, double, Config{Workers: 4, Capacity: n, Timeout: time.Second})
	got := make([]int, n)
	errs := make([]error, n)
	runs := make([]int, n)
	inTick := false
	for i := range n {
		p.Submit(i, func(resp int, err error) {
			require.True(t, inTick, "callback of call %d ran outside Tick", i)
			got[i], errs[i] = resp, err
			runs[i]++
		})
	}
	delivered := 0
	timeout := time.After(patience)
	for delivered < n {
		select {
		case <-p.Ready():
		case <-timeout:
			t.Fatalf("%d of %d delivered", delivered, n)
		}
		inTick = true
		delivered += p.Tick(time.Hour).Delivered
		inTick = false
	}
	for i := range n {
		require.Equal(t, 1, runs[i], "call %d", i)
		if i%2 == 1 {
			require.ErrorIs(t, errs[i], errOdd, "call %d", i)
		} else {
			require.NoError(t, errs[i], "call %d", i)
			require.Equal(t, 2*i, got[i], "call %d", i)
		}
	}
	require.Equal(t, 0, p.Tick(time.Hour).Delivered, "a Tick after every delivery")
}

func TestTickBudget(t *testing.T) {
	for _, c := range []struct {
		name          string
		waiting       int
		budget        time.Duration
		wantDelivered int
	}{
		{"nothing waits", 0, time.Hour, 0},
		{"spent budget delivers one", 5, 0, 1},
		{"negative budget delivers one", 5, -time.Second, 1},
		{"ample budget delivers all", 5, time.Hour, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := newPool(t, double, Config{Workers: 2, Capacity: 8, Timeout: time.Second})
			ran := 0
			for i := range c.waiting {
				p.Submit(2*i, func(int, error) { ran++ })
			}
			waitReplies(t, p, c.waiting)
			rep := p.Tick(c.budget)
			require.Equal(t, c.wantDelivered, rep.Delivered)
			require.Equal(t, c.wantDelivered, ran)
			require.Equal(t, c.waiting-c.wantDelivered, rep.Remaining)
			require.Equal(t, rep.Remaining, p.Waiting())
			require.Zero(t, p.Queued())
			require.Equal(t, c.wantDelivered == 0, rep.Elapsed == 0, "Elapsed %v", rep.Elapsed)
		})
	}
}

// A reply signals Ready; the signal stays until taken, one for many replies.
func TestReadySignalsReplies(t *testing.T) {
	p := newPool(t, double, Config{Workers: 1, Capacity: 4, Timeout: time.Second})
	select {
	case <-p.Ready():
		t.Fatal("Ready before any call")
	default:
	}
	p.Submit(2, func(int, error) {})
	p.Submit(4, func(int, error) {})
	waitReplies(t, p, 2)
	select {
	case <-p.Ready():
	case <-time.After(patience):
		t.Fatal("no Ready after two replies")
	}
	select {
	case <-p.Ready():
		t.Fatal("a second Ready signal for replies the first announced")
	default:
	}
	require.Equal(t, 2, p.Tick(time.Hour).Delivered)
}

// With CaptureMetadata every call asks for the response's header and trailer.
func TestCaptureMetadata(t *testing.T) {
	for _, capture := range []bool{false, true} {
		t.Run(fmt.Sprint(capture), func(t *testing.T) {
			opts := make(chan []grpc.CallOption, 1)
			call := func(_ context.Context, req int, o ...grpc.CallOption) (int, error) {
				opts <- o
				return req, nil
			}
			p := newPool(t, call, Config{Workers: 1, Capacity: 1, Timeout: time.Second, CaptureMetadata: capture})
			p.Submit(1, func(int, error) {})
			var types []string
			for _, o := range <-opts {
				types = append(types, reflect.TypeOf(o).String())
			}
			if capture {
				require.Equal(t, []string{"grpc.HeaderCallOption", "grpc.TrailerCallOption"}, types)
			} else {
				require.Empty(t, types)
			}
		})
	}
}

// Each call gets a deadline Timeout after a worker takes it.
func TestCallTimeout(t *testing.T) {
	deadlines := make(chan time.Duration, 1)
	call := func(ctx context.Context, req int, _ ...grpc.CallOption) (int, error) {
		d, ok := ctx.Deadline()
		require.True(t, ok)
		deadlines <- time.Until(d)
		return req, nil
	}
	p := newPool(t, call, Config{Workers: 1, Capacity: 1, Timeout: time.Minute})
	p.Submit(1, func(int, error) {})
	// Within a second of a minute: the margin is the time between the worker's
	// context.WithTimeout and the call reading it, on a busy machine under -race.
	require.InDelta(t, float64(time.Minute), float64(<-deadlines), float64(time.Second))
}

// Close runs the callbacks of every call submitted, even when the workers are blocked on a
// full reply channel, and returns nil.
func TestCloseDeliversEverything(t *testing.T) {
	p, err := New(double, Config{Workers: 1, Capacity: 1, Timeout: time.Second})
	require.NoError(t, err)
	ran := 0
	for i := range 2 { // one reply fills the channel; the worker then blocks with the other
		p.Submit(2*i, func(int, error) { ran++ })
	}
	waitReplies(t, p, 1)
	closed := make(chan error, 1)
	go func() { closed <- p.Close(context.Background()) }()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(patience):
		t.Fatal("Close did not return")
	}
	require.Equal(t, 2, ran)
	require.NoError(t, p.Close(context.Background()), "a second Close")
}

// A Close whose context ends first cancels the calls still running and returns its error;
// their callbacks still run, with the cancellation.
func TestCloseCutShort(t *testing.T) {
	started := make(chan struct{}, 1)
	blocking := func(ctx context.Context, _ int, _ ...grpc.CallOption) (int, error) {
		started <- struct{}{}
		<-ctx.Done()
		return 0, ctx.Err()
	}
	p, err := New(blocking, Config{Workers: 1, Capacity: 1, Timeout: time.Hour})
	require.NoError(t, err)
	var got error
	p.Submit(1, func(_ int, err error) { got = err })
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.ErrorIs(t, p.Close(ctx), context.Canceled)
	require.ErrorIs(t, got, context.Canceled)
}

// The pool calls a generated stub against a real backend on loopback.
func TestGeneratedStub(t *testing.T) {
	srv, err := server.Start(context.Background(), server.Options{Addr: "127.0.0.1:0"})
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	cc, err := grpc.NewClient(srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, cc.Close()) })
	stub := networkpb.NewDataServiceClient(cc)
	ctx := context.Background()
	_, err = stub.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: &networkpb.Player{Xuid: "7", Name: "Alex"}})
	require.NoError(t, err)

	p, err := New(stub.GetPlayer, Config{Workers: 4, Capacity: 16, Timeout: patience, CaptureMetadata: true})
	require.NoError(t, err)
	names := map[string]int{}
	for _, xuid := range []string{"7", "7", "8"} {
		p.Submit(&networkpb.GetPlayerRequest{Xuid: xuid}, func(resp *networkpb.GetPlayerResponse, err error) {
			require.NoError(t, err)
			names[resp.GetPlayer().GetName()]++
		})
	}
	require.NoError(t, p.Close(ctx))
	require.Equal(t, map[string]int{"Alex": 2, "": 1}, names)
}
