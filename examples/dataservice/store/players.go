package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// ErrInvalidPlayer is returned by Save when the player is nil or has no XUID.
// Callers that accept players from the network should validate them more
// thoroughly before saving.
var ErrInvalidPlayer = errors.New("store: invalid player")

// playerColumns lists the columns scanned by scanPlayer, in order.
const playerColumns = `xuid, name, level, coins, last_seen_secs, last_seen_nanos, playtime_seconds, version`

// Get returns the player with the given XUID. The boolean result is false,
// with a nil error, when no such player exists.
func (s *Store) Get(ctx context.Context, xuid string) (*networkpb.Player, bool, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+playerColumns+` FROM players WHERE xuid = ?`, xuid)
	p, err := scanPlayer(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: get player %q: %w", xuid, err)
	}
	return p, true, nil
}

// Save inserts p, or replaces the stored player with the same XUID, and
// returns the version now stored: 1 for a new player, the previous version
// plus one otherwise. The version in p is ignored and p is not modified.
//
// If p has no last_seen, the current time is stored instead. Save checks only
// that p is non-nil with a non-empty XUID (returning ErrInvalidPlayer
// otherwise); the database rejects negative levels and coins.
func (s *Store) Save(ctx context.Context, p *networkpb.Player) (int64, error) {
	if p == nil || p.GetXuid() == "" {
		return 0, ErrInvalidPlayer
	}
	seen := p.GetLastSeen()
	if seen == nil {
		seen = timestamppb.New(s.now())
	}
	// One statement, so the read of the previous version and the write of
	// the new one are atomic without an explicit transaction.
	const q = `
INSERT INTO players (xuid, name, level, coins, last_seen_secs, last_seen_nanos, playtime_seconds, version)
VALUES (?, ?, ?, ?, ?, ?, ?, 1)
ON CONFLICT (xuid) DO UPDATE SET
	name             = excluded.name,
	level            = excluded.level,
	coins            = excluded.coins,
	last_seen_secs   = excluded.last_seen_secs,
	last_seen_nanos  = excluded.last_seen_nanos,
	playtime_seconds = excluded.playtime_seconds,
	version          = players.version + 1
RETURNING version`
	var version int64
	err := s.db.QueryRowContext(ctx, q,
		p.GetXuid(), p.GetName(), p.GetLevel(), p.GetCoins(),
		seen.GetSeconds(), seen.GetNanos(), p.GetPlaytimeSeconds(),
	).Scan(&version)
	if err != nil {
		return 0, fmt.Errorf("store: save player %q: %w", p.GetXuid(), err)
	}
	return version, nil
}

// Top returns up to limit players ordered by coins descending, then level
// descending, then XUID ascending. limit must be positive.
func (s *Store) Top(ctx context.Context, limit int) ([]*networkpb.Player, error) {
	if limit <= 0 {
		return nil, fmt.Errorf("store: leaderboard limit %d must be positive", limit)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+playerColumns+` FROM players
ORDER BY coins DESC, level DESC, xuid ASC
LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: leaderboard: %w", err)
	}
	defer rows.Close()

	players := make([]*networkpb.Player, 0, min(limit, 128))
	for rows.Next() {
		p, err := scanPlayer(rows)
		if err != nil {
			return nil, fmt.Errorf("store: leaderboard: %w", err)
		}
		players = append(players, p)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: leaderboard: %w", err)
	}
	return players, nil
}

// scanner is implemented by *sql.Row and *sql.Rows.
type scanner interface {
	Scan(dest ...any) error
}

// scanPlayer reads one row selected with playerColumns.
func scanPlayer(sc scanner) (*networkpb.Player, error) {
	var (
		p           networkpb.Player
		secs, nanos sql.NullInt64
	)
	err := sc.Scan(&p.Xuid, &p.Name, &p.Level, &p.Coins, &secs, &nanos, &p.PlaytimeSeconds, &p.Version)
	if err != nil {
		return nil, err
	}
	if secs.Valid {
		p.LastSeen = &timestamppb.Timestamp{Seconds: secs.Int64, Nanos: int32(nanos.Int64)}
	}
	return &p, nil
}
