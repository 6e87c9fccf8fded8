package server

// Stats counts the DataService calls a server has received since it started,
// including calls that failed.
type Stats struct {
	// Gets is the number of GetPlayer calls.
	Gets uint64
	// Saves is the number of SavePlayer calls.
	Saves uint64
	// LeaderboardCalls is the number of GetLeaderboard calls.
	LeaderboardCalls uint64
	// LeaderboardWatches is the number of WatchLeaderboard streams.
	LeaderboardWatches uint64
}
