// Package store persists dataservice players in an embedded SQLite database.
//
// It uses the pure-Go modernc.org/sqlite driver, so it needs no cgo and no
// external database process. A Store is safe for concurrent use.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// driverName is the database/sql driver name registered by modernc.org/sqlite.
const driverName = "sqlite"

// busyTimeout is how long a statement waits for a lock held by another
// connection before failing with SQLITE_BUSY.
const busyTimeout = 5 * time.Second

// maxFileConns bounds the connection pool of a file database. WAL lets
// readers run concurrently with the single writer; more connections than this
// only add lock contention.
const maxFileConns = 8

// Store is a player store backed by SQLite. Create one with Open and release
// it with Close.
type Store struct {
	db  *sql.DB
	now func() time.Time
}

// Open opens the SQLite database at path, creating the file and the schema if
// they do not exist yet.
//
// If path is "" or ":memory:", Open creates a private in-memory database that
// lives until Close and is not shared with any other Store. Otherwise path is a
// file-system path; the database is put in WAL mode with a busy timeout so that
// concurrent readers and writers wait for each other instead of failing.
func Open(ctx context.Context, path string) (*Store, error) {
	db, err := openDB(path)
	if err != nil {
		return nil, err
	}
	if err := createSchema(ctx, db); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("store: create schema: %w", err)
	}
	return &Store{db: db, now: time.Now}, nil
}

// openDB opens and configures the connection pool for path without touching
// the schema.
func openDB(path string) (*sql.DB, error) {
	pragmas := fmt.Sprintf("_pragma=busy_timeout(%d)", busyTimeout.Milliseconds())

	if path == "" || path == ":memory:" {
		name, err := memoryName()
		if err != nil {
			return nil, err
		}
		// A named shared-cache in-memory database survives as long as one
		// connection to it is open. Pinning the pool to a single connection
		// that never expires keeps the data alive and avoids shared-cache
		// table-lock errors between connections.
		db, err := sql.Open(driverName, "file:"+name+"?mode=memory&cache=shared&"+pragmas)
		if err != nil {
			return nil, fmt.Errorf("store: open in-memory database: %w", err)
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		db.SetConnMaxLifetime(0)
		db.SetConnMaxIdleTime(0)
		return db, nil
	}

	// Without a "file:" prefix the driver strips the query string from the
	// DSN and opens the rest as a plain path, so a '?' in the path itself
	// would be misread as the start of the parameters.
	if strings.Contains(path, "?") {
		return nil, fmt.Errorf("store: database path %q must not contain '?'", path)
	}
	db, err := sql.Open(driverName, path+"?"+pragmas+"&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(maxFileConns)
	db.SetMaxIdleConns(maxFileConns)
	return db, nil
}

// memoryName returns a random database name so that in-memory stores opened
// by the same process never share data.
func memoryName() (string, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("store: random database name: %w", err)
	}
	return "prpc-" + hex.EncodeToString(b[:]), nil
}

// Close closes the database. It waits for queries already running to finish;
// calls made after Close fail. For an in-memory store, Close discards all data.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}
