package store

import (
	"context"
	"database/sql"
)

// schema creates the players table and the index that serves the leaderboard
// query. Every statement is idempotent, so it runs on each Open.
//
// last_seen is kept as a (seconds, nanos) pair, exactly as in
// google.protobuf.Timestamp, so that every valid timestamp round-trips
// without loss; both columns are NULL when the player has no last_seen.
const schema = `
CREATE TABLE IF NOT EXISTS players (
	xuid             TEXT    NOT NULL PRIMARY KEY,
	name             TEXT    NOT NULL,
	level            INTEGER NOT NULL CHECK (level >= 0),
	coins            INTEGER NOT NULL CHECK (coins >= 0),
	last_seen_secs   INTEGER,
	last_seen_nanos  INTEGER,
	playtime_seconds INTEGER NOT NULL,
	version          INTEGER NOT NULL CHECK (version >= 1)
) STRICT;

CREATE INDEX IF NOT EXISTS players_leaderboard
	ON players (coins DESC, level DESC, xuid ASC);
`

// createSchema applies schema to db.
func createSchema(ctx context.Context, db *sql.DB) error {
	_, err := db.ExecContext(ctx, schema)
	return err
}
