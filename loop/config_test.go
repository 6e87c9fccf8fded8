package loop_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// sliceReactor is a Reactor of a type that is not comparable.
type sliceReactor []int

func (sliceReactor) Tick(time.Duration) (r reactor.TickReport) { return r }
func (sliceReactor) Ready() <-chan struct{}                    { return nil }

func TestConfigValidation(t *testing.T) {
	f := newFake("f", newRecorder(), nil)
	var nilReactor *reactor.Reactor
	cases := []struct {
		name string
		cfg  loop.Config
		err  string // "" if valid
	}{
		{"zero value", loop.Config{}, ""},
		{"TPS 1", loop.Config{TPS: 1}, ""},
		{"TPS max", loop.Config{TPS: loop.MaxTPS}, ""},
		{"TPS negative", loop.Config{TPS: -1}, "prpc: loop.Config.TPS is -1; must be between 1 and 1000 (0 means the default, 20)"},
		{"TPS over max", loop.Config{TPS: loop.MaxTPS + 1}, "prpc: loop.Config.TPS is 1001; must be between 1 and 1000"},
		{"Budget 1ns", loop.Config{Budget: time.Nanosecond}, ""},
		{"Budget max", loop.Config{Budget: loop.MaxBudget}, ""},
		{"Budget negative", loop.Config{Budget: -time.Millisecond}, "prpc: loop.Config.Budget is -1ms; must be more than 0 and at most 1s (0 means the default, 2ms)"},
		{"Budget over max", loop.Config{Budget: loop.MaxBudget + 1}, "prpc: loop.Config.Budget is 1.000000001s; must be more than 0 and at most 1s"},
		{"ShutdownTimeout max", loop.Config{ShutdownTimeout: loop.MaxShutdownTimeout}, ""},
		{"ShutdownTimeout negative", loop.Config{ShutdownTimeout: -time.Second}, "prpc: loop.Config.ShutdownTimeout is -1s; must be more than 0 and at most 1h0m0s (0 means the default, 5s)"},
		{"ShutdownTimeout over max", loop.Config{ShutdownTimeout: loop.MaxShutdownTimeout + 1}, "prpc: loop.Config.ShutdownTimeout is 1h0m0.000000001s; must be more than 0 and at most 1h0m0s"},
		{"nil reactor", loop.Config{Reactors: []loop.Reactor{f, nil}}, "prpc: loop.Config.Reactors[1] is nil; every reactor must be non-nil"},
		{"nil *reactor.Reactor", loop.Config{Reactors: []loop.Reactor{nilReactor}}, "prpc: loop.Config.Reactors[0] is nil"},
		{"duplicate reactor", loop.Config{Reactors: []loop.Reactor{f, sliceReactor{}, f}}, "prpc: loop.Config.Reactors[2] is a duplicate; it is Reactors[0] again"},
		{"non-comparable reactors", loop.Config{Reactors: []loop.Reactor{sliceReactor{}, sliceReactor{}}}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := loop.New(c.cfg)
			if c.err == "" {
				require.NoError(t, err)
				require.NotNil(t, l)
				return
			}
			require.ErrorContains(t, err, c.err)
			require.Nil(t, l)
		})
	}
}

// New copies Config.Reactors: changing the caller's slice later does not change the Loop.
func TestConfigReactorsCopied(t *testing.T) {
	rec, clk := newRecorder(), reactortest.NewManualClock(epoch)
	r0, r1 := newFake("r0", rec, clk), newFake("r1", rec, clk)
	rs := []loop.Reactor{r0}
	ctx, cancel := context.WithCancel(context.Background())
	l, err := loop.New(loop.Config{Reactors: rs, Clock: clk, OnTick: func(uint64) { cancel() }})
	require.NoError(t, err)
	rs[0] = r1
	require.NoError(t, l.Run(ctx))
	require.Equal(t, []string{"r0.Tick"}, rec.take())
}
