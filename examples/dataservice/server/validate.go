package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// Limits enforced on requests. Violations fail with codes.InvalidArgument.
const (
	// MaxXUIDBytes is the maximum length of a player XUID, in bytes.
	MaxXUIDBytes = 64
	// MaxNameBytes is the maximum length of a player name, in bytes.
	MaxNameBytes = 32
	// DefaultLeaderboardLimit is the number of players GetLeaderboard
	// returns when the request's limit is 0.
	DefaultLeaderboardLimit = 10
	// MaxLeaderboardLimit is the largest limit GetLeaderboard accepts.
	MaxLeaderboardLimit = 100
)

// invalidArgument returns a codes.InvalidArgument status error.
func invalidArgument(format string, args ...any) error {
	return status.Errorf(codes.InvalidArgument, format, args...)
}

// validateXUID checks that xuid is non-empty and at most MaxXUIDBytes long.
func validateXUID(xuid string) error {
	switch {
	case xuid == "":
		return invalidArgument("xuid must not be empty")
	case len(xuid) > MaxXUIDBytes:
		return invalidArgument("xuid is %d bytes long; the maximum is %d", len(xuid), MaxXUIDBytes)
	}
	return nil
}

// validatePlayer checks every field of a player about to be saved.
func validatePlayer(p *networkpb.Player) error {
	if p == nil {
		return invalidArgument("player must be set")
	}
	if err := validateXUID(p.GetXuid()); err != nil {
		return err
	}
	if n := len(p.GetName()); n > MaxNameBytes {
		return invalidArgument("name is %d bytes long; the maximum is %d", n, MaxNameBytes)
	}
	if p.GetLevel() < 0 {
		return invalidArgument("level is %d; it must not be negative", p.GetLevel())
	}
	if p.GetCoins() < 0 {
		return invalidArgument("coins is %d; it must not be negative", p.GetCoins())
	}
	if p.GetPlaytimeSeconds() < 0 {
		return invalidArgument("playtime_seconds is %d; it must not be negative", p.GetPlaytimeSeconds())
	}
	if ts := p.GetLastSeen(); ts != nil {
		if err := ts.CheckValid(); err != nil {
			return invalidArgument("last_seen is invalid: %v", err)
		}
	}
	return nil
}

// leaderboardLimit maps a requested leaderboard size to the number of
// players to return: 0 means DefaultLeaderboardLimit, and anything outside
// 1..MaxLeaderboardLimit is rejected.
func leaderboardLimit(limit int32) (int, error) {
	switch {
	case limit == 0:
		return DefaultLeaderboardLimit, nil
	case limit < 1 || limit > MaxLeaderboardLimit:
		return 0, invalidArgument("limit is %d; it must be between 1 and %d, or 0 for the default of %d",
			limit, MaxLeaderboardLimit, DefaultLeaderboardLimit)
	}
	return int(limit), nil
}
