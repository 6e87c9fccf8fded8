package server

import (
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// WatchLeaderboard sends the leaderboard GetLeaderboard would return at once, then again each
// time a save has changed it, until the client ends the stream. Saves that arrive while it
// reads or sends are folded into one new board: a watcher that reads slowly sees fewer boards,
// and always the newest.
func (s *Service) WatchLeaderboard(req *networkpb.GetLeaderboardRequest, stream grpc.ServerStreamingServer[networkpb.GetLeaderboardResponse]) error {
	s.watches.Add(1)
	limit, err := leaderboardLimit(req.GetLimit())
	if err != nil {
		return err
	}
	ctx := stream.Context()
	var last *networkpb.GetLeaderboardResponse
	for {
		next := s.saved.next() // before reading the board: a save after the read closes it
		players, err := s.store.Top(ctx, limit)
		if err != nil {
			return s.storeError(ctx, "WatchLeaderboard", err)
		}
		board := &networkpb.GetLeaderboardResponse{Players: players}
		if last == nil || !proto.Equal(board, last) {
			if err := stream.Send(board); err != nil {
				return err
			}
			last = board
		}
		select {
		case <-next:
		case <-ctx.Done():
			return status.FromContextError(ctx.Err()).Err()
		}
	}
}

// savedSignal tells watchers that a save happened: next returns a channel that the next
// signal closes. The zero value is ready to use.
type savedSignal struct {
	mu sync.Mutex
	ch chan struct{}
}

// next returns a channel closed by the first signal after next returned.
func (s *savedSignal) next() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch == nil {
		s.ch = make(chan struct{})
	}
	return s.ch
}

// signal closes the channel next handed out, if any, so that its watchers wake.
func (s *savedSignal) signal() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ch != nil {
		close(s.ch)
		s.ch = nil
	}
}
