package policybench

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/threadcpu"
)

func TestStreamCases(t *testing.T) {
	var names []string
	for _, c := range StreamCases(DefaultStream()) {
		names = append(names, c.Name)
	}
	require.Equal(t, []string{"prpc-watch", "prpc-watch-batch", "handwritten", "handwritten-budget"}, names, "the names of BenchmarkStreamTickCost's sub-benchmarks")
}

// TestRunStream runs every case in short: each receives every message of its stream, in
// ticks that cost the host some time, and an unknown client is refused.
func TestRunStream(t *testing.T) {
	for _, c := range StreamCases(DefaultStream().Short()) {
		t.Run(c.Name, func(t *testing.T) {
			res, err := RunStream(c.Config)
			require.NoError(t, err) // an error unless every message arrived, once and counted
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

// TestRunStreamAt runs every case against a server it did not start, as the burst's pinned
// placement does with a server in another process: each receives its stream from the server
// at Addr, and fails once that server has stopped, rather than starting one of its own.
func TestRunStreamAt(t *testing.T) {
	srv, err := StartServer(func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{}, nil
	})
	require.NoError(t, err)
	addr := srv.Addr()
	cases := StreamCases(DefaultStream().Short())
	for _, c := range cases {
		c.Config.Addr = addr
		t.Run(c.Name, func(t *testing.T) {
			_, err := RunStream(c.Config)
			require.NoError(t, err) // an error unless every message arrived, once and counted
		})
	}
	require.NoError(t, srv.Stop())
	for _, c := range cases {
		c.Config.Addr = addr
		t.Run(c.Name+"/stopped", func(t *testing.T) {
			_, err := RunStream(c.Config)
			require.Error(t, err, "a stream from a server that has stopped")
		})
	}
}
