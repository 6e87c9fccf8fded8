package main

import (
	"errors"
	"fmt"

	"github.com/trixnew/prpc/calls"
	pb "github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// leaderboardSize is how many players the game's leaderboard shows.
const leaderboardSize = 5

// leaderboard is the game's view of the coin leaderboard, kept current by the data service's
// WatchLeaderboard stream rather than polled: the reactor delivers each board inside Tick, on
// the loop goroutine, like a call's callback, so the world reads and writes it without a
// lock. The stream keeps only the newest board waiting (KeepLatest): a state stream, in which
// a board the game has not shown yet is worth nothing once a newer one has arrived.
type leaderboard struct {
	stream *calls.Stream[*pb.GetLeaderboardRequest, *pb.GetLeaderboardResponse]
	top    []*pb.Player // the newest board, best first
	boards uint64       // boards delivered
	ends   int          // times OnEnd ran: 1 once the stream has ended
	endErr error        // the stream's end
}

// watchLeaderboard opens the leaderboard's stream. It returns at once; the boards arrive in
// later Ticks.
func (w *world) watchLeaderboard() {
	b := &w.board
	b.stream = w.data.WatchLeaderboard(&pb.GetLeaderboardRequest{Limit: leaderboardSize},
		&calls.StreamOptions{KeepLatest: true},
		calls.StreamHandler[*pb.GetLeaderboardRequest, *pb.GetLeaderboardResponse]{
			OnMessage: func(board *pb.GetLeaderboardResponse) { // in Tick, on the loop goroutine
				b.boards++
				b.top = board.GetPlayers()
			},
			OnEnd: func(err error) { // once, after the last board
				b.ends++
				b.endErr = err
			},
		})
}

// stopWatching ends the leaderboard's stream, as the game stops: its end, ErrCancelled,
// arrives at a later Tick of the loop's drain.
func (w *world) stopWatching() {
	if w.board.stream != nil {
		w.board.stream.Cancel()
	}
}

// summary describes the stream for the run's summary.
func (b *leaderboard) summary() string {
	leader := "none"
	if len(b.top) > 0 {
		leader = fmt.Sprintf("%s with %d coins", b.top[0].GetName(), b.top[0].GetCoins())
	}
	end := "not ended"
	switch {
	case b.ends > 0 && b.endErr == nil:
		end = "ended by the server"
	case b.ends > 0:
		end = "ended: " + b.endErr.Error()
	}
	return fmt.Sprintf("%d boards streamed (WatchLeaderboard, newest kept); leader when the game stopped: %s; %s", b.boards, leader, end)
}

// problem says what is wrong with the stream at the end of a run, or "" if nothing is: it
// must have ended exactly once, cancelled as the game stopped. (A run stopped at once may
// end before the first board arrives.)
func (b *leaderboard) problem() string {
	switch {
	case b.ends != 1:
		return fmt.Sprintf("the leaderboard stream ended %d times, want once", b.ends)
	case !errors.Is(b.endErr, calls.ErrCancelled):
		return fmt.Sprintf("the leaderboard stream ended with %v, want cancelled as the game stopped", b.endErr)
	}
	return ""
}
