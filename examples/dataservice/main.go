// Command dataservice runs the example DataService gRPC backend that prpc's
// example game server talks to. It stores players in SQLite and also serves
// the standard gRPC health service and server reflection.
//
// Usage:
//
//	go run ./examples/dataservice [flags]
//
// The flags are:
//
//	-addr host:port
//		Address to listen on (default 127.0.0.1:50051).
//	-db path
//		SQLite database file; empty keeps players in memory until exit.
//	-tls-cert file, -tls-key file
//		PEM certificate chain and private key; together they enable TLS.
//	-client-ca file
//		PEM certificate authorities; requires client certificates signed
//		by one of them (mutual TLS). Needs -tls-cert and -tls-key.
//	-debug
//		Log every call.
//
// For example:
//
//	go run ./examples/dataservice -addr 127.0.0.1:50051 -db players.db
//	grpcurl -plaintext -d '{"limit": 5}' 127.0.0.1:50051 network.DataService/GetLeaderboard
//
// The server stops gracefully on SIGINT or SIGTERM, waiting at most
// 10 seconds for calls in flight before closing every connection.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/server"
)

// shutdownTimeout bounds the graceful shutdown after a signal.
const shutdownTimeout = 10 * time.Second

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	err := run(ctx, os.Args[1:], os.Stderr, nil)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "dataservice:", err)
		os.Exit(1)
	}
}

// run parses args, serves until ctx is done and then shuts down gracefully.
// Logs and usage messages go to stderr. If ready is not nil it is called with
// the running server once it accepts connections.
func run(ctx context.Context, args []string, stderr io.Writer, ready func(*server.Server)) error {
	fs := flag.NewFlagSet("dataservice", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:50051", "`address` to listen on")
	dbPath := fs.String("db", "", "SQLite database `file`; empty keeps players in memory")
	certFile := fs.String("tls-cert", "", "PEM certificate chain `file`; enables TLS with -tls-key")
	keyFile := fs.String("tls-key", "", "PEM private key `file`; enables TLS with -tls-cert")
	clientCA := fs.String("client-ca", "", "PEM CA `file` that client certificates must chain to (mutual TLS)")
	debug := fs.Bool("debug", false, "log every call")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}

	level := slog.LevelInfo
	if *debug {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	srv, err := server.Start(ctx, server.Options{
		Addr:         *addr,
		DBPath:       *dbPath,
		TLSCertFile:  *certFile,
		TLSKeyFile:   *keyFile,
		ClientCAFile: *clientCA,
		Logger:       logger,
	})
	if err != nil {
		return err
	}
	logger.Info("dataservice listening", "addr", srv.Addr(), "db", dbName(*dbPath), "tls", *certFile != "", "mtls", *clientCA != "")
	if ready != nil {
		ready(srv)
	}

	select {
	case <-ctx.Done():
		logger.Info("dataservice shutting down", "timeout", shutdownTimeout)
	case <-srv.Done():
		// Serving failed on its own; release the store and report why.
	}

	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
	defer cancel()
	err = errors.Join(srv.Err(), srv.Shutdown(shutdownCtx))
	stats := srv.Stats()
	logger.Info("dataservice stopped", "gets", stats.Gets, "saves", stats.Saves, "leaderboard_calls", stats.LeaderboardCalls, "leaderboard_watches", stats.LeaderboardWatches)
	return err
}

// dbName describes the database for the startup log line.
func dbName(path string) string {
	if path == "" {
		return "(in memory)"
	}
	return path
}
