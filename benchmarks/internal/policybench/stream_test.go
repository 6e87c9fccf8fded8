package policybench

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/threadcpu"
)

func TestStreamCases(t *testing.T) {
	var names []string
	for _, c := range StreamCases(DefaultStream()) {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"prpc-watch", "handwritten", "handwritten-budget"}, names, "the names of BenchmarkStreamTickCost's sub-benchmarks")
}

// TestRunStream runs every case in short: each receives every message of its stream, in
// ticks that cost the host some time, and an unknown client is refused.
func TestRunStream(t *testing.T) {
	for _, c := range StreamCases(DefaultStream().Short()) {
		t.Run(c.Name, func(t *testing.T) {
			res, err := RunStream(c.Config)
			require.NoError(t, err)
			require.Equal(t, c.Config.Messages, res.Messages)
			require.Positive(t, res.Ticks)
			require.Positive(t, res.Elapsed)
			require.Positive(t, res.MessagesPerSecond())
			if _, ok := threadcpu.Now(); ok {
				require.Positive(t, res.HostNsPerMessage(), "the ticks cost the host thread CPU")
			}
		})
	}
	_, err := RunStream(StreamConfig{Client: "carrier-pigeon"})
	require.ErrorContains(t, err, "unknown stream client")
}
