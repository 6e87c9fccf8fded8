package donectx_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/donectx"
)

// ctx is a context whose done half is a State.
type ctx struct {
	donectx.State
}

func (*ctx) Deadline() (time.Time, bool) { return time.Time{}, false }
func (*ctx) Value(any) any               { return nil }

func newCtx() *ctx { return &ctx{} }

func TestEndReachesDerivedContexts(t *testing.T) {
	for _, err := range []error{context.DeadlineExceeded, context.Canceled, errors.New("other")} {
		t.Run(err.Error(), func(t *testing.T) {
			c := newCtx()
			child, cancel := context.WithCancel(c)
			defer cancel()
			stopped, stopCancel := context.WithCancel(c)
			stopCancel() // detaches it: End must not reach it
			var ran int
			stop := c.AfterFunc(func() { ran++ })
			require.NoError(t, c.Err())
			require.True(t, c.End(err))
			require.False(t, c.End(context.Canceled), "ended twice")
			require.Equal(t, err, c.Err())
			require.Equal(t, err, child.Err(), "a derived context ends with the same error, at once")
			require.Equal(t, context.Canceled, stopped.Err())
			require.Equal(t, 1, ran)
			require.False(t, stop(), "stop after the function ran")
			select {
			case <-c.Done():
			default:
				t.Fatal("Done not closed")
			}
		})
	}
}

func TestAfterFuncStopped(t *testing.T) {
	c := newCtx()
	ran := false
	stop := c.AfterFunc(func() { ran = true })
	require.True(t, stop())
	require.False(t, stop(), "stopped twice")
	c.End(context.DeadlineExceeded)
	require.False(t, ran)
}

func TestAfterFuncWhenEnded(t *testing.T) {
	c := newCtx()
	c.End(context.DeadlineExceeded)
	ran := make(chan struct{})
	stop := c.AfterFunc(func() { close(ran) })
	<-ran // on a goroutine of its own
	require.False(t, stop())
}

// TestManyAfterFuncs checks the functions beyond the first, stopped or not.
func TestManyAfterFuncs(t *testing.T) {
	c := newCtx()
	var ran []int
	var stops []func() bool
	for i := range 4 {
		stops = append(stops, c.AfterFunc(func() { ran = append(ran, i) }))
	}
	require.True(t, stops[0]())
	require.True(t, stops[2]())
	c.AfterFunc(func() { ran = append(ran, 4) }) // after a stop: a slot of its own
	c.End(context.Canceled)
	require.Equal(t, []int{1, 3, 4}, ran)
	for _, stop := range stops {
		require.False(t, stop())
	}
}
