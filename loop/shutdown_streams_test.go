package loop_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/loop"
)

// streamingFake is a drainableFake with CloseStreams, which it records.
type streamingFake struct {
	*drainableFake
}

func (s streamingFake) CloseStreams() { s.rec.add("%s.CloseStreams", s.name) }

// The drain begins by ending the open streams of each reactor that has CloseStreams, after
// OnStop and before its first tick, so that their ends are delivered while it drains.
func TestShutdownClosesStreamsAsDrainBegins(t *testing.T) {
	h := newHarness(t)
	r0 := streamingFake{newDrainable("r0", h.rec, h.clk, 2)} // busy for one tick of the drain
	r1 := newDrainable("r1", h.rec, h.clk, 1)                // no CloseStreams
	h.start(loop.Config{
		Reactors: []loop.Reactor{r0, r1},
		OnStop:   func() { h.rec.add("OnStop") },
	})
	require.Equal(t, []string{"r0.Tick", "r1.Tick"}, h.rec.take())
	h.cancel()
	h.rec.wait(t, 2)
	h.waitBlocked()
	require.Equal(t, []string{"OnStop", "r0.CloseStreams"}, h.rec.take(), "once, as the drain begins")
	h.clk.Advance(period)
	require.NoError(t, h.wait())
	require.Equal(t, []string{"r0.Tick", "r1.Tick", "r0.Close", "r1.Close"}, h.rec.take())
}
