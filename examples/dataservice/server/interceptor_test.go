package server

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// fakeServerStream is a grpc.ServerStream with a context and nothing else.
type fakeServerStream struct {
	grpc.ServerStream
	ctx context.Context
}

func (f fakeServerStream) Context() context.Context { return f.ctx }

// The stream interceptor passes a handler's error through and turns its panic into Internal.
func TestStreamInterceptor(t *testing.T) {
	errFailed := status.Error(codes.NotFound, "missing")
	for _, tc := range []struct {
		name    string
		handler grpc.StreamHandler
		code    codes.Code
		same    error
	}{
		{"ok", func(any, grpc.ServerStream) error { return nil }, codes.OK, nil},
		{"error", func(any, grpc.ServerStream) error { return errFailed }, codes.NotFound, errFailed},
		{"panic", func(any, grpc.ServerStream) error { panic("boom") }, codes.Internal, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			icpt := streamInterceptor(slog.New(slog.DiscardHandler))
			err := icpt(nil, fakeServerStream{ctx: t.Context()}, &grpc.StreamServerInfo{FullMethod: "/network.DataService/WatchLeaderboard"}, tc.handler)
			require.Equal(t, tc.code, status.Code(err))
			if tc.same != nil {
				require.True(t, errors.Is(err, tc.same))
			}
		})
	}
}
