package reactor_test

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/testpb"
)

// echoFunc is the signature of an Echo handler.
type echoFunc func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error)

// hold returns an Echo handler that holds every call until release is closed, then echoes
// its Message, or fails when the call's context ends first. If seen is not nil, it counts the
// calls by Message.
func hold(release <-chan struct{}, seen *arrivals) echoFunc {
	return func(ctx context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		if seen != nil {
			seen.add(req.GetMessage())
		}
		select {
		case <-release:
			return &testpb.EchoResponse{Message: req.GetMessage()}, nil
		case <-ctx.Done():
			return nil, status.FromContextError(ctx.Err()).Err()
		}
	}
}

// arrivals counts a server's calls by Message, to prove that no call reached it twice.
type arrivals struct {
	mu sync.Mutex
	n  map[string]int
}

func newArrivals() *arrivals { return &arrivals{n: map[string]int{}} }

func (s *arrivals) add(msg string) {
	s.mu.Lock()
	s.n[msg]++
	s.mu.Unlock()
}

// check returns the number of distinct messages seen and the messages seen more than once.
func (s *arrivals) check() (distinct int, dups []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for m, n := range s.n {
		if n > 1 {
			dups = append(dups, fmt.Sprintf("%s×%d", m, n))
		}
	}
	return len(s.n), dups
}

// snapshot returns the messages seen so far.
func (s *arrivals) snapshot() map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]bool, len(s.n))
	for m := range s.n {
		out[m] = true
	}
	return out
}

// has reports whether msg has been seen.
func (s *arrivals) has(msg string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n[msg] > 0
}
