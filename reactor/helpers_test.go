package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
)

var echo = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Echo")

// newReactor starts a reactor against srv with cfg (Target and Credentials filled in) and
// closes it when the test ends.
func newReactor(t *testing.T, srv *testserver.Server, cfg reactor.Config) *reactor.Reactor {
	t.Helper()
	if cfg.Target == "" && len(cfg.Targets) == 0 && cfg.Conn == nil {
		cfg.Target = srv.Addr()
	}
	if cfg.Credentials == nil && cfg.Conn == nil {
		cfg.Credentials = reactor.Insecure()
	}
	r, err := reactor.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = r.Close(ctx)
	})
	return r
}

// waitFor ticks r, woken by Ready, until done reports true or the bound passes.
func waitFor(t *testing.T, r *reactor.Reactor, bound time.Duration, done func() bool) {
	t.Helper()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for !done() {
		select {
		case <-r.Ready():
			r.Tick(time.Second)
		case <-deadline.C:
			t.Fatalf("condition not met within %v", bound)
		}
	}
}
