package main

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/trixnew/prpc/calls"
)

// A run's leaderboard stream must end once, cancelled as the game stops.
func TestLeaderboardProblem(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    leaderboard
		want string
	}{
		{"cancelled", leaderboard{ends: 1, endErr: calls.ErrCancelled, boards: 3}, ""},
		{"cancelled before a board", leaderboard{ends: 1, endErr: calls.ErrCancelled}, ""},
		{"never ended", leaderboard{boards: 3}, "the leaderboard stream ended 0 times, want once"},
		{"ended twice", leaderboard{ends: 2, endErr: calls.ErrCancelled}, "the leaderboard stream ended 2 times, want once"},
		{"ended by the server", leaderboard{ends: 1}, "the leaderboard stream ended with <nil>, want cancelled as the game stopped"},
		{"failed", leaderboard{ends: 1, endErr: errors.New("boom")}, "the leaderboard stream ended with boom, want cancelled as the game stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, tc.b.problem()) })
	}
}
