package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// unaryInterceptor logs every unary call at debug level and turns a panicking
// handler into an Internal error instead of crashing the process.
func unaryInterceptor(logger *slog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (resp any, err error) {
		start := time.Now()
		defer func() {
			if r := recover(); r != nil {
				logger.ErrorContext(ctx, "dataservice: handler panic",
					"method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				resp, err = nil, status.Error(codes.Internal, "internal error")
			}
			logger.DebugContext(ctx, "dataservice: call",
				"method", info.FullMethod, "code", status.Code(err), "duration", time.Since(start))
		}()
		return handler(ctx, req)
	}
}

// streamInterceptor does for streams what unaryInterceptor does for unary calls: it logs each
// stream at debug level when it ends, and turns a panicking handler into an Internal error.
func streamInterceptor(logger *slog.Logger) grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
		ctx, start := ss.Context(), time.Now()
		defer func() {
			if r := recover(); r != nil {
				logger.ErrorContext(ctx, "dataservice: handler panic",
					"method", info.FullMethod, "panic", r, "stack", string(debug.Stack()))
				err = status.Error(codes.Internal, "internal error")
			}
			logger.DebugContext(ctx, "dataservice: stream",
				"method", info.FullMethod, "code", status.Code(err), "duration", time.Since(start))
		}()
		return handler(srv, ss)
	}
}
