package server

import (
	"context"
	"log/slog"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/store"
)

// Service implements networkpb.DataServiceServer over a store.Store. It is
// safe for concurrent use. It does not own the store: closing the store is up
// to the caller.
type Service struct {
	networkpb.UnimplementedDataServiceServer

	store  *store.Store
	logger *slog.Logger

	gets, saves, leaderboards, watches atomic.Uint64
	saved                              savedSignal
}

// NewService returns a Service that keeps players in st and logs storage
// failures to logger. A nil logger discards the logs.
func NewService(st *store.Store, logger *slog.Logger) *Service {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Service{store: st, logger: logger}
}

// GetPlayer returns the player with the requested XUID. A player that does
// not exist is reported with found = false rather than an error.
func (s *Service) GetPlayer(ctx context.Context, req *networkpb.GetPlayerRequest) (*networkpb.GetPlayerResponse, error) {
	s.gets.Add(1)
	if err := validateXUID(req.GetXuid()); err != nil {
		return nil, err
	}
	p, found, err := s.store.Get(ctx, req.GetXuid())
	if err != nil {
		return nil, s.storeError(ctx, "GetPlayer", err)
	}
	return &networkpb.GetPlayerResponse{Player: p, Found: found}, nil
}

// SavePlayer validates and upserts the player, returning its new version.
func (s *Service) SavePlayer(ctx context.Context, req *networkpb.SavePlayerRequest) (*networkpb.SavePlayerResponse, error) {
	s.saves.Add(1)
	if err := validatePlayer(req.GetPlayer()); err != nil {
		return nil, err
	}
	version, err := s.store.Save(ctx, req.GetPlayer())
	if err != nil {
		return nil, s.storeError(ctx, "SavePlayer", err)
	}
	s.saved.signal()
	return &networkpb.SavePlayerResponse{Version: version}, nil
}

// GetLeaderboard returns the top players by coins, then level, then XUID.
func (s *Service) GetLeaderboard(ctx context.Context, req *networkpb.GetLeaderboardRequest) (*networkpb.GetLeaderboardResponse, error) {
	s.leaderboards.Add(1)
	limit, err := leaderboardLimit(req.GetLimit())
	if err != nil {
		return nil, err
	}
	players, err := s.store.Top(ctx, limit)
	if err != nil {
		return nil, s.storeError(ctx, "GetLeaderboard", err)
	}
	return &networkpb.GetLeaderboardResponse{Players: players}, nil
}

// Stats returns the number of calls received so far.
func (s *Service) Stats() Stats {
	return Stats{
		Gets:               s.gets.Load(),
		Saves:              s.saves.Load(),
		LeaderboardCalls:   s.leaderboards.Load(),
		LeaderboardWatches: s.watches.Load(),
	}
}

// storeError turns a store failure into a status error. A failure caused by
// the caller giving up keeps the context's code; anything else is logged and
// reported as Internal without leaking storage details to the client.
func (s *Service) storeError(ctx context.Context, method string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return status.FromContextError(ctxErr).Err()
	}
	s.logger.ErrorContext(ctx, "dataservice: storage failure", "method", method, "err", err)
	return status.Error(codes.Internal, "internal storage error")
}
