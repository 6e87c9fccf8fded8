package main

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/trixnew/prpc/reactor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestPeers runs the cases in process against each peer, plaintext, each case a subtest, in
// the order the command runs them, through one reactor per peer; the servers, the reactor and
// their goroutines are gone at the end (goleak).
func TestPeers(t *testing.T) {
	for _, tc := range []struct {
		peer  string
		start func() (string, func(), error)
		cases []interopCase
	}{
		{peerGRPC, func() (string, func(), error) { return startInProcess(nil) }, grpcCases},
		{peerConnect, startConnect, connectCases},
	} {
		t.Run(tc.peer, func(t *testing.T) {
			target, stop, err := tc.start()
			if err != nil {
				t.Fatalf("starting the server: %v", err)
			}
			t.Cleanup(stop)
			r := newTestReactor(t, target)
			for _, c := range tc.cases {
				t.Run(c.name, func(t *testing.T) {
					if err := c.run(r); err != nil {
						t.Fatal(err)
					}
				})
			}
		})
	}
}

// TestStatusDetailsFailsWithoutDetails runs status_details against grpc-go's TestService,
// which fails with the status asked for but without details: the case must fail there, or it
// could not catch details lost on the way.
func TestStatusDetailsFailsWithoutDetails(t *testing.T) {
	target, stop, err := startInProcess(nil)
	if err != nil {
		t.Fatalf("starting the server: %v", err)
	}
	t.Cleanup(stop)
	r := newTestReactor(t, target)
	if err := runStatusDetails(r); err == nil {
		t.Fatal("status_details passed against a server that sends no details")
	}
}

// newTestReactor returns the cases' reactor dialled to target, in plaintext, closed when the
// test ends (within callTimeout).
func newTestReactor(t *testing.T, target string) *reactor.Reactor {
	t.Helper()
	r, err := newReactor(target, reactor.Insecure())
	if err != nil {
		t.Fatalf("reactor.New: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}
