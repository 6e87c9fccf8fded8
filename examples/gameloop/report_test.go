package main

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/loop"
)

// The summary's TPS counts the ticks of play only: the loop's drain at shutdown ticks on
// (without OnTick) after the last of them, and counting its ticks over the time played would
// report a rate above the target.
func TestSummaryTPSCountsTicksOfPlay(t *testing.T) {
	start := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	s := summary{
		cfg:    &config{tps: 20},
		start:  start,
		stopAt: start.Add(time.Second),
		end:    start.Add(2 * time.Second),
		first:  start,
		last:   start.Add(time.Second), // 21 ticks of play, 50 ms apart
		played: 21,
		loop:   loop.Stats{Ticks: 41}, // and 20 more while the drain ran
	}
	var out bytes.Buffer
	s.print(&out)
	require.Contains(t, out.String(), "41 ticks, 0 skipped, 0 overruns, 20.0 TPS measured (target 20)")
}
