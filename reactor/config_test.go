package reactor_test

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/lanecodec"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

func TestConfigInvalid(t *testing.T) {
	fake := &recordingConn{}
	conn := func(c reactor.Config) reactor.Config { c.Conn = fake; return c }
	target := func(c reactor.Config) reactor.Config {
		c.Target = "127.0.0.1:1"
		c.Credentials = reactor.Insecure()
		return c
	}
	echoAgain := calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse](echo.Path())

	tests := []struct {
		name string
		cfg  reactor.Config
		want []string // substrings of the error: the field and its bound
	}{
		{"neither Target nor Conn", reactor.Config{}, []string{"Config.Target", "Config.Conn"}},
		{"neither, with Credentials", reactor.Config{Credentials: reactor.Insecure()}, []string{"Config.Target", "Config.Conn"}},
		{"both Target and Conn", reactor.Config{Target: "127.0.0.1:1", Conn: fake}, []string{"Config.Target", "Config.Conn", "exclusive"}},
		{"Target without Credentials", reactor.Config{Target: "127.0.0.1:1"}, []string{"Config.Credentials", "nil"}},
		{"Conn with Credentials", conn(reactor.Config{Credentials: reactor.Insecure()}), []string{"Config.Credentials", "Config.Conn"}},
		{"Conn with DialOptions", conn(reactor.Config{DialOptions: []grpc.DialOption{grpc.WithUserAgent("x")}}), []string{"DialOptions", "Config.Conn"}},
		{"Conn with ServiceConfig", conn(reactor.Config{ServiceConfig: `{}`}), []string{"ServiceConfig", "Config.Conn"}},
		{"Conn with Backoff", conn(reactor.Config{Backoff: reactor.Backoff{BaseDelay: time.Second}}), []string{"Backoff", "Config.Conn"}},
		{"Conn with Backoff jitter only", conn(reactor.Config{Backoff: reactor.Backoff{Jitter: 0.5}}), []string{"Backoff", "Config.Conn"}},

		{"Workers -1", conn(reactor.Config{Workers: -1}), []string{"Config.Workers", "-1", "256"}},
		{"Workers 257", conn(reactor.Config{Workers: 257}), []string{"Config.Workers", "257", "256"}},
		{"BatchSize -1", conn(reactor.Config{BatchSize: -1}), []string{"Config.BatchSize", "-1", "1024"}},
		{"BatchSize 1025", conn(reactor.Config{BatchSize: 1025}), []string{"Config.BatchSize", "1025", "1024"}},
		{"MaxOutstanding -1", conn(reactor.Config{MaxOutstanding: -1}), []string{"Config.MaxOutstanding", "-1", "1048576"}},
		{"MaxOutstanding 1<<20+1", conn(reactor.Config{MaxOutstanding: 1<<20 + 1}), []string{"Config.MaxOutstanding", "1048577", "1048576"}},

		{"MaxTimeout -1", conn(reactor.Config{MaxTimeout: -1}), []string{"Config.MaxTimeout", "-1ns", "1h0m0s"}},
		{"MaxTimeout over 1h", conn(reactor.Config{MaxTimeout: time.Hour + time.Nanosecond}), []string{"Config.MaxTimeout", "1h0m0.000000001s", "1h0m0s"}},
		{"DefaultTimeout -1", conn(reactor.Config{DefaultTimeout: -1}), []string{"Config.DefaultTimeout", "-1ns", "MaxTimeout, 5s"}},
		{"DefaultTimeout over MaxTimeout", conn(reactor.Config{MaxTimeout: 2 * time.Second, DefaultTimeout: 3 * time.Second}), []string{"Config.DefaultTimeout", "3s", "MaxTimeout, 2s"}},
		{"DefaultTimeout over default MaxTimeout", conn(reactor.Config{DefaultTimeout: 6 * time.Second}), []string{"Config.DefaultTimeout", "6s", "MaxTimeout, 5s"}},
		{"DefaultTimeout unset, MaxTimeout 1s", conn(reactor.Config{MaxTimeout: time.Second}), []string{"Config.DefaultTimeout", "unset", "1.5s", "MaxTimeout, 1s"}},

		{"Limits.MaxRequestBytes -1", conn(reactor.Config{Limits: limits.Limits{MaxRequestBytes: -1}}), []string{"Config.Limits.MaxRequestBytes", "-1", "1073741824"}},
		{"Limits.MaxRequestBytes over", conn(reactor.Config{Limits: limits.Limits{MaxRequestBytes: 1<<30 + 1}}), []string{"Config.Limits.MaxRequestBytes", "1073741825", "1073741824"}},
		{"Limits.MaxResponseBytes -1", conn(reactor.Config{Limits: limits.Limits{MaxResponseBytes: -1}}), []string{"Config.Limits.MaxResponseBytes", "-1", "1073741824"}},
		{"Limits.MaxResponseBytes over", conn(reactor.Config{Limits: limits.Limits{MaxResponseBytes: 1<<30 + 1}}), []string{"Config.Limits.MaxResponseBytes", "1073741824"}},
		{"Limits.MaxMetadataBytes -1", conn(reactor.Config{Limits: limits.Limits{MaxMetadataBytes: -1}}), []string{"Config.Limits.MaxMetadataBytes", "-1", "1048576"}},
		{"Limits.MaxMetadataBytes over", conn(reactor.Config{Limits: limits.Limits{MaxMetadataBytes: 1<<20 + 1}}), []string{"Config.Limits.MaxMetadataBytes", "1048577", "1048576"}},
		{"Limits.MaxReceivedHeaderBytes -1", conn(reactor.Config{Limits: limits.Limits{MaxReceivedHeaderBytes: -1}}), []string{"Config.Limits.MaxReceivedHeaderBytes", "-1", "16777216"}},
		{"Limits.MaxReceivedHeaderBytes over", conn(reactor.Config{Limits: limits.Limits{MaxReceivedHeaderBytes: 16<<20 + 1}}), []string{"Config.Limits.MaxReceivedHeaderBytes", "16777217", "16777216"}},
		{"Limits.MaxReceivedHeaderBytes below default MaxMetadataBytes + 8 KiB", conn(reactor.Config{Limits: limits.Limits{MaxReceivedHeaderBytes: 40959}}), []string{"Config.Limits.MaxReceivedHeaderBytes", "40959", "MaxMetadataBytes + 8192", "40960"}},
		{"Limits.MaxReceivedHeaderBytes below MaxMetadataBytes + 8 KiB", target(reactor.Config{Limits: limits.Limits{MaxMetadataBytes: 100 << 10, MaxReceivedHeaderBytes: 100 << 10}}), []string{"Config.Limits.MaxReceivedHeaderBytes", "102400", "MaxMetadataBytes + 8192", "110592"}},
		{"Limits.MaxReceivedHeaderBytes unset, default below MaxMetadataBytes + 8 KiB", conn(reactor.Config{Limits: limits.Limits{MaxMetadataBytes: 1 << 20}}), []string{"Config.Limits.MaxReceivedHeaderBytes", "unset", "1048576", "1056768", "set it"}},

		{"Backoff.BaseDelay -1", target(reactor.Config{Backoff: reactor.Backoff{BaseDelay: -1}}), []string{"Config.Backoff.BaseDelay", "-1ns", "MaxBackoffDelay, 5m0s"}},
		{"Backoff.BaseDelay over 5 min", target(reactor.Config{Backoff: reactor.Backoff{BaseDelay: 2 * time.Hour}}), []string{"Config.Backoff.BaseDelay", "2h0m0s", "MaxBackoffDelay, 5m0s"}},
		{"Backoff.MaxDelay below BaseDelay", target(reactor.Config{Backoff: reactor.Backoff{BaseDelay: 2 * time.Second, MaxDelay: time.Second}}), []string{"Config.Backoff.MaxDelay", "1s", "BaseDelay (2s)"}},
		{"Backoff.MaxDelay -1", target(reactor.Config{Backoff: reactor.Backoff{MaxDelay: -1}}), []string{"Config.Backoff.MaxDelay", "-1ns"}},
		{"Backoff.MaxDelay over 5 min", target(reactor.Config{Backoff: reactor.Backoff{MaxDelay: 2 * time.Hour}}), []string{"Config.Backoff.MaxDelay", "2h0m0s", "MaxBackoffDelay, 5m0s"}},
		{"Backoff.Multiplier below 1", target(reactor.Config{Backoff: reactor.Backoff{Multiplier: 0.5}}), []string{"Config.Backoff.Multiplier", "0.5", "at least 1"}},
		{"Backoff.Multiplier negative", target(reactor.Config{Backoff: reactor.Backoff{Multiplier: -2}}), []string{"Config.Backoff.Multiplier", "-2", "at least 1"}},
		{"Backoff.Multiplier NaN", target(reactor.Config{Backoff: reactor.Backoff{Multiplier: math.NaN()}}), []string{"Config.Backoff.Multiplier", "NaN", "at least 1"}},
		{"Backoff.Jitter negative", target(reactor.Config{Backoff: reactor.Backoff{Jitter: -0.1}}), []string{"Config.Backoff.Jitter", "-0.1", "more than 0 and at most 1"}},
		{"Backoff.Jitter over 1", target(reactor.Config{Backoff: reactor.Backoff{Jitter: 1.5}}), []string{"Config.Backoff.Jitter", "1.5", "more than 0 and at most 1"}},
		{"Backoff.Jitter NaN", target(reactor.Config{Backoff: reactor.Backoff{Jitter: math.NaN()}}), []string{"Config.Backoff.Jitter", "NaN", "more than 0 and at most 1"}},
		{"Backoff.MinConnectTimeout -1", target(reactor.Config{Backoff: reactor.Backoff{MinConnectTimeout: -1}}), []string{"Config.Backoff.MinConnectTimeout", "-1ns", "MaxMinConnectTimeout, 5m0s"}},
		{"Backoff.MinConnectTimeout over 5 min", target(reactor.Config{Backoff: reactor.Backoff{MinConnectTimeout: 2 * time.Hour}}), []string{"Config.Backoff.MinConnectTimeout", "2h0m0s", "MaxMinConnectTimeout, 5m0s"}},

		{"Methods with nil", conn(reactor.Config{Methods: []calls.Descriptor{echo, nil}}), []string{"Config.Methods[1]", "nil"}},
		{"Methods with nil first", conn(reactor.Config{Methods: []calls.Descriptor{nil}}), []string{"Config.Methods[0]", "nil"}},
		{"Methods with a typed nil", conn(reactor.Config{Methods: []calls.Descriptor{(*calls.Method[*testpb.EchoRequest, *testpb.EchoResponse])(nil)}}), []string{"Config.Methods[0]", "nil"}},
		{"Methods with duplicate path", conn(reactor.Config{Methods: []calls.Descriptor{echo, otherMethod, echoAgain}}), []string{"Config.Methods[2]", echo.Path(), "duplicate"}},
		{"Methods with the same method twice", conn(reactor.Config{Methods: []calls.Descriptor{echo, echo}}), []string{"Config.Methods[1]", echo.Path()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r *reactor.Reactor
			var err error
			require.NotPanics(t, func() { r, err = reactor.New(tt.cfg) })
			require.Error(t, err)
			require.Nil(t, r)
			for _, w := range tt.want {
				require.Contains(t, err.Error(), w)
			}
		})
	}
	require.Empty(t, fake.recorded(), "no invalid config may make a call")
}

func TestConfigBoundsAccepted(t *testing.T) {
	tests := []struct {
		name string
		cfg  reactor.Config
	}{
		{"minimal", reactor.Config{}},
		{"ones", reactor.Config{Workers: 1, BatchSize: 1, MaxOutstanding: 1}},
		{"maxima", reactor.Config{Workers: 256, BatchSize: 1, MaxOutstanding: 1 << 20, MaxTimeout: time.Hour, DefaultTimeout: time.Hour}},
		{"DefaultTimeout equal to MaxTimeout", reactor.Config{MaxTimeout: 2 * time.Second, DefaultTimeout: 2 * time.Second}},
		{"MaxTimeout 1s with DefaultTimeout set", reactor.Config{MaxTimeout: time.Second, DefaultTimeout: time.Second}},
		{"limits at max", reactor.Config{Limits: limits.Limits{MaxRequestBytes: 1 << 30, MaxResponseBytes: 1 << 30, MaxMetadataBytes: 1 << 20, MaxReceivedHeaderBytes: 16 << 20}}},
		{"MaxReceivedHeaderBytes at MaxMetadataBytes + 8 KiB", reactor.Config{Limits: limits.Limits{MaxMetadataBytes: 1 << 20, MaxReceivedHeaderBytes: 1<<20 + 8<<10}}},
		{"Methods", reactor.Config{Methods: []calls.Descriptor{echo, otherMethod}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := reactortest.NewReactor(t, echoBackend(), tt.cfg)
			var got string
			p := reactor.Call(r, echo, &testpb.EchoRequest{Message: "ok"}, nil).
				Then(func(resp *testpb.EchoResponse) { got = resp.GetMessage() })
			waitFor(t, r, func() bool { return p.State() != calls.Pending })
			require.NoError(t, p.Err())
			require.Equal(t, "ok", got)
		})
	}
}

func TestConfigBackoffAccepted(t *testing.T) {
	tests := []struct {
		name string
		b    reactor.Backoff
	}{
		{"zero", reactor.Backoff{}},
		{"all set", reactor.Backoff{BaseDelay: time.Millisecond, MaxDelay: time.Second, Multiplier: 1, Jitter: 1, MinConnectTimeout: time.Second}},
		{"BaseDelay above the default MaxDelay", reactor.Backoff{BaseDelay: 10 * time.Second}},
		{"at max", reactor.Backoff{BaseDelay: reactor.MaxBackoffDelay, MaxDelay: reactor.MaxBackoffDelay, MinConnectTimeout: reactor.MaxMinConnectTimeout}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := reactor.New(reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure(), Backoff: tt.b})
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, r.Close(ctx))
		})
	}
}

// TestConfigDefaults checks that zero fields resolve to their documented defaults, as seen
// by the connection: the codec and limit call options, the deadline, the worker count.
func TestConfigDefaults(t *testing.T) {
	fake := &recordingConn{}
	r := newReactor(t, nil, reactor.Config{Conn: fake})
	require.Len(t, r.Stats().Invokers, reactor.DefaultWorkers)

	before := time.Now()
	p := reactor.Call(r, echo, &testpb.EchoRequest{Message: "hi"}, nil)
	after := time.Now()
	waitFor(t, r, func() bool { return p.State() != calls.Pending })
	require.NoError(t, p.Err())

	rec := fake.recorded()
	require.Len(t, rec, 1)
	c := rec[0]
	require.Equal(t, echo.Path(), c.method)
	require.Equal(t, "*testpb.EchoRequest", c.argsType, "the request itself, for interceptors to see")
	require.Equal(t, "*testpb.EchoResponse", c.replyType)
	require.True(t, c.hasDL, "every call has a deadline")
	// The deadline is the submission time plus DefaultTimeout, and submission happened
	// between before and after.
	require.False(t, c.deadline.Before(before.Add(reactor.DefaultTimeout)), "deadline %v", c.deadline.Sub(before))
	require.False(t, c.deadline.After(after.Add(reactor.DefaultTimeout)), "deadline %v", c.deadline.Sub(after))

	var codecOK bool
	send, recv := -1, -1
	for _, o := range c.opts {
		switch o := o.(type) {
		case grpc.ForceCodecV2CallOption:
			_, codecOK = o.CodecV2.(*lanecodec.Codec)
		case grpc.MaxSendMsgSizeCallOption:
			send = o.MaxSendMsgSize // the last one wins
		case grpc.MaxRecvMsgSizeCallOption:
			recv = o.MaxRecvMsgSize
		}
	}
	require.True(t, codecOK, "prpc's codec is forced per call")
	require.Equal(t, limits.DefaultMaxRequestBytes, send)
	require.Equal(t, limits.DefaultMaxResponseBytes, recv)

	// MaxTimeout defaults to 5 s: exactly 5 s is accepted, a nanosecond more is not.
	over := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: reactor.DefaultMaxTimeout + 1})
	require.Equal(t, calls.Failed, over.State())
	require.ErrorIs(t, over.Err(), calls.ErrInvalidArgument)
	atMax := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Timeout: reactor.DefaultMaxTimeout})
	waitFor(t, r, func() bool { return atMax.State() != calls.Pending })
	require.NoError(t, atMax.Err())

	// MaxRequestBytes defaults to 4 MiB: a request of exactly 4 MiB is sent, one more byte is not.
	req := &testpb.EchoRequest{Payload: make([]byte, limits.DefaultMaxRequestBytes)}
	req.Payload = req.Payload[:len(req.Payload)-(proto.Size(req)-limits.DefaultMaxRequestBytes)]
	require.Equal(t, limits.DefaultMaxRequestBytes, proto.Size(req))
	fits := reactor.Call(r, echo, req, nil)
	big := &testpb.EchoRequest{Payload: append(req.Payload[:len(req.Payload):len(req.Payload)], 0)}
	tooBig := reactor.Call(r, echo, big, nil)
	waitFor(t, r, func() bool { return fits.State() != calls.Pending && tooBig.State() != calls.Pending })
	require.NoError(t, fits.Err())
	require.ErrorIs(t, tooBig.Err(), calls.ErrTooLarge)
	require.ErrorContains(t, tooBig.Err(), "Limits.MaxRequestBytes")

	// MaxMetadataBytes defaults to 32 KiB: key + value + 32 per value.
	value := make([]byte, limits.DefaultMaxMetadataBytes-len("x-big")-32)
	for i := range value {
		value[i] = 'v'
	}
	mdFits := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Metadata: map[string][]string{"x-big": {string(value)}}})
	mdOver := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Metadata: map[string][]string{"x-big": {string(value) + "v"}}})
	require.ErrorIs(t, mdOver.Err(), calls.ErrTooLarge)
	waitFor(t, r, func() bool { return mdFits.State() != calls.Pending })
	require.NoError(t, mdFits.Err())

	// Rejected calls never reach the connection; the request over the limit reaches it, whose
	// codec refuses to encode it, so it is never sent.
	require.Len(t, fake.recorded(), 5)
}

// TestConfigDefaultConcurrency checks the default Workers × BatchSize in-flight bound and the
// default MaxOutstanding.
func TestConfigDefaultConcurrency(t *testing.T) {
	fake := &recordingConn{block: make(chan struct{}), entered: make(chan struct{}, reactor.DefaultMaxOutstanding)}
	r := newReactor(t, nil, reactor.Config{Conn: fake, MaxTimeout: time.Hour, DefaultTimeout: time.Hour})

	promises := make([]*calls.Promise[*testpb.EchoResponse], 0, reactor.DefaultMaxOutstanding)
	for range reactor.DefaultMaxOutstanding {
		p := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
		require.Equal(t, calls.Pending, p.State())
		promises = append(promises, p)
	}
	over := reactor.Call(r, echo, &testpb.EchoRequest{}, nil)
	require.Equal(t, calls.Failed, over.State())
	require.ErrorIs(t, over.Err(), calls.ErrOverloaded)

	// Workers × BatchSize = 8 calls reach the connection; the rest wait for a slot.
	inFlight := reactor.DefaultWorkers * reactor.DefaultBatchSize
	for range inFlight {
		<-fake.entered
	}
	bound := time.NewTimer(10 * time.Second)
	defer bound.Stop()
	poll := time.NewTicker(time.Millisecond)
	defer poll.Stop()
	for {
		st := r.Stats()
		// Pending is read under the counters' lock, Queued and InFlight after it: wait for
		// all three, as a snapshot can see the last call queued before it sees it counted.
		if st.InFlight == inFlight && st.Queued == reactor.DefaultMaxOutstanding-inFlight && st.Pending == reactor.DefaultMaxOutstanding {
			for _, inv := range st.Invokers {
				require.Equal(t, reactor.DefaultBatchSize, inv.Load)
				require.Equal(t, reactor.InvokerFull, inv.State)
			}
			break
		}
		select {
		case <-poll.C:
		case <-bound.C:
			t.Fatalf("stats never settled at %d in flight: %+v", inFlight, st)
		}
	}
	require.Len(t, fake.recorded(), inFlight)

	close(fake.block)
	done := 0
	waitFor(t, r, func() bool {
		for ; done < len(promises) && promises[done].State() != calls.Pending; done++ {
			require.NoError(t, promises[done].Err())
		}
		return done == len(promises)
	})
	require.Len(t, fake.recorded(), reactor.DefaultMaxOutstanding)
}
