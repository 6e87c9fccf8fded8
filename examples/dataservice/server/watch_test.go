package server

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// xuids returns the XUIDs of a board, best first.
func xuids(board *networkpb.GetLeaderboardResponse) []string {
	var out []string
	for _, p := range board.GetPlayers() {
		out = append(out, p.GetXuid())
	}
	return out
}

// A watcher gets the board at once, a new one after a save that changes it, and none after
// a save that changes only players below it; the stream ends when the client cancels.
func TestWatchLeaderboard(t *testing.T) {
	srv, client, _ := startWithClient(t)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	save := func(xuid string, coins int64) {
		t.Helper()
		_, err := client.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: &networkpb.Player{Xuid: xuid, Coins: coins}})
		require.NoError(t, err)
	}
	save("a", 100)
	save("b", 50)

	watchCtx, stop := context.WithCancel(ctx)
	stream, err := client.WatchLeaderboard(watchCtx, &networkpb.GetLeaderboardRequest{Limit: 2})
	require.NoError(t, err)
	board, err := stream.Recv()
	require.NoError(t, err)
	require.Equal(t, []string{"a", "b"}, xuids(board))

	save("c", 10)  // below the top two: no new board
	save("b", 200) // b overtakes a
	board, err = stream.Recv()
	require.NoError(t, err)
	require.Equal(t, []string{"b", "a"}, xuids(board))
	require.Equal(t, uint64(1), srv.Stats().LeaderboardWatches)

	stop()
	_, err = stream.Recv()
	require.Equal(t, codes.Canceled, status.Code(err))
}

// A bad limit fails the stream with InvalidArgument before any board.
func TestWatchLeaderboardInvalidLimit(t *testing.T) {
	_, client, _ := startWithClient(t)
	stream, err := client.WatchLeaderboard(t.Context(), &networkpb.GetLeaderboardRequest{Limit: MaxLeaderboardLimit + 1})
	require.NoError(t, err)
	_, err = stream.Recv()
	require.Equal(t, codes.InvalidArgument, status.Code(err))
}
