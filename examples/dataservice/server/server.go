package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/store"
)

// DefaultAddr is the address Start listens on when Options.Addr is empty: an
// ephemeral port on the IPv4 loopback interface.
const DefaultAddr = "127.0.0.1:0"

// ServiceName is the full gRPC name of the DataService, under which the
// health service reports its status.
const ServiceName = "network.DataService"

// Options configures a server started with Start. The zero value serves
// plaintext gRPC on DefaultAddr from a private in-memory database.
type Options struct {
	// Addr is the TCP address to listen on. Empty means DefaultAddr.
	Addr string
	// DBPath is the SQLite database file. Empty means a private in-memory
	// database that is discarded when the server stops.
	DBPath string
	// TLSCertFile and TLSKeyFile are PEM files holding the server's
	// certificate chain and private key. Setting both enables TLS; setting
	// only one is an error.
	TLSCertFile, TLSKeyFile string
	// ClientCAFile is a PEM file of certificate authorities. When set, every
	// client must present a certificate signed by one of them (mutual TLS).
	// It requires TLSCertFile and TLSKeyFile.
	ClientCAFile string
	// Logger receives the server's logs. Nil discards them.
	Logger *slog.Logger
}

// Server is a running dataservice gRPC server. Create one with Start and stop
// it with Stop, GracefulStop or Shutdown; any of them may be called more than
// once and from several goroutines.
type Server struct {
	grpc    *grpc.Server
	health  *health.Server
	service *Service
	store   *store.Store
	addr    string
	logger  *slog.Logger

	serveDone chan struct{} // closed when the Serve goroutine returns
	serveErr  error         // set before serveDone is closed

	closeOnce sync.Once
	closeErr  error // error from closing the store, set by closeOnce
}

// Start opens the store, listens on opts.Addr and serves DataService, the
// gRPC health service and server reflection in a background goroutine. The
// health status of "" and ServiceName is SERVING once Start returns.
//
// ctx bounds only the startup; it does not stop the running server.
func Start(ctx context.Context, opts Options) (*Server, error) {
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	addr := opts.Addr
	if addr == "" {
		addr = DefaultAddr
	}
	creds, err := opts.transportCredentials()
	if err != nil {
		return nil, err
	}

	st, err := store.Open(ctx, opts.DBPath)
	if err != nil {
		return nil, fmt.Errorf("server: %w", err)
	}
	var lc net.ListenConfig
	lis, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		_ = st.Close()
		return nil, fmt.Errorf("server: listen: %w", err)
	}

	serverOpts := []grpc.ServerOption{
		grpc.ChainUnaryInterceptor(unaryInterceptor(logger)),
		grpc.ChainStreamInterceptor(streamInterceptor(logger)),
		// Stop and GracefulStop return only after every handler has
		// returned, so the store is never closed under a running call.
		grpc.WaitForHandlers(true),
		// Game servers keep one long-lived connection and may ping it to
		// detect dead peers; allow that instead of answering with GOAWAY.
		grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
			MinTime:             5 * time.Second,
			PermitWithoutStream: true,
		}),
	}
	if creds != nil {
		serverOpts = append(serverOpts, grpc.Creds(creds))
	}

	s := &Server{
		grpc:      grpc.NewServer(serverOpts...),
		health:    health.NewServer(),
		service:   NewService(st, logger),
		store:     st,
		addr:      lis.Addr().String(),
		logger:    logger,
		serveDone: make(chan struct{}),
	}
	networkpb.RegisterDataServiceServer(s.grpc, s.service)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	reflection.Register(s.grpc)
	s.health.SetServingStatus("", healthpb.HealthCheckResponse_SERVING)
	s.health.SetServingStatus(ServiceName, healthpb.HealthCheckResponse_SERVING)

	go s.serve(lis)
	logger.Debug("dataservice: serving", "addr", s.addr, "tls", creds != nil, "mtls", opts.ClientCAFile != "")
	return s, nil
}

// serve runs the gRPC server until it is stopped.
func (s *Server) serve(lis net.Listener) {
	defer close(s.serveDone)
	if err := s.grpc.Serve(lis); err != nil {
		s.serveErr = fmt.Errorf("server: serve: %w", err)
		s.logger.Error("dataservice: serve failed", "err", err)
	}
}

// Addr returns the address the server listens on, with the actual port when
// Options.Addr asked for port 0.
func (s *Server) Addr() string {
	return s.addr
}

// Stats returns the number of DataService calls received so far.
func (s *Server) Stats() Stats {
	return s.service.Stats()
}

// Done returns a channel that is closed when the server stops serving,
// either because it was stopped or because accepting connections failed.
func (s *Server) Done() <-chan struct{} {
	return s.serveDone
}

// Err returns the error that made the server stop serving on its own, or nil
// if it is still serving or was stopped by Stop, GracefulStop or Shutdown.
func (s *Server) Err() error {
	select {
	case <-s.serveDone:
		return s.serveErr
	default:
		return nil
	}
}

// Stop stops the server immediately: it closes the listener and every
// connection, cancelling calls in flight, then closes the store. Errors from
// closing the store are logged.
func (s *Server) Stop() {
	s.health.Shutdown()
	s.grpc.Stop()
	s.finish()
}

// GracefulStop stops accepting connections, sets every health status to
// NOT_SERVING, waits for calls in flight to finish and then closes the store.
// Open streams, such as health Watch calls and WatchLeaderboard, keep it waiting; use Shutdown to
// bound the wait.
func (s *Server) GracefulStop() {
	_ = s.Shutdown(context.Background())
}

// Shutdown stops the server gracefully like GracefulStop, but if ctx is done
// before the calls in flight finish it falls back to Stop. It returns
// ctx.Err() in that case, joined with any error from closing the store.
func (s *Server) Shutdown(ctx context.Context) error {
	// Tell load balancers and health watchers first, while connections are
	// still open to carry the news.
	s.health.Shutdown()

	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		s.grpc.GracefulStop()
	}()

	var err error
	select {
	case <-stopped:
	case <-ctx.Done():
		select {
		case <-stopped: // finished gracefully after all
		default:
			err = ctx.Err()
			s.logger.Warn("dataservice: graceful shutdown interrupted; stopping now", "err", err)
			s.grpc.Stop()
			<-stopped
		}
	}
	return errors.Join(err, s.finish())
}

// finish waits for the Serve goroutine and closes the store, once. It
// returns the error from closing the store.
func (s *Server) finish() error {
	s.closeOnce.Do(func() {
		<-s.serveDone
		s.closeErr = s.store.Close()
		if s.closeErr != nil {
			s.logger.Error("dataservice: closing store", "err", s.closeErr)
		}
		s.logger.Debug("dataservice: stopped", "addr", s.addr)
	})
	return s.closeErr
}
