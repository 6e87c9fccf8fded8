package reactortest_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// serverCalls records what grpc-go's server functions returned inside a handler.
type serverCalls struct {
	mu   sync.Mutex
	errs map[string]error
}

// do runs fn and records its error under name.
func (s *serverCalls) do(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.errs == nil {
		s.errs = map[string]error{}
	}
	s.errs[name] = err
}

func (s *serverCalls) err(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errs[name]
}

// TestBackendServerMetadata checks that grpc.SetHeader, grpc.SendHeader, grpc.SetTrailer and
// grpc.Method work in a Backend handler as on a gRPC server, and that what they set reaches
// the promise and the call's error.
func TestBackendServerMetadata(t *testing.T) {
	notFound := status.Error(codes.NotFound, "no such player")
	tests := []struct {
		name    string
		handler func(ctx context.Context, rec *serverCalls) (*testpb.EchoResponse, error)
		noMD    bool // the call does not ask for response metadata
		code    codes.Code
		header  metadata.MD
		trailer metadata.MD
		errs    map[string]codes.Code // what the server functions returned, by name
	}{
		{
			name: "SetHeader and SetTrailer, joined",
			handler: func(ctx context.Context, rec *serverCalls) (*testpb.EchoResponse, error) {
				rec.do("SetHeader 1", grpc.SetHeader(ctx, metadata.Pairs("x-h", "1")))
				rec.do("SetHeader 2", grpc.SetHeader(ctx, metadata.Pairs("x-h", "2", "x-other", "o")))
				rec.do("SetTrailer 1", grpc.SetTrailer(ctx, metadata.Pairs("x-t", "1")))
				rec.do("SetTrailer 2", grpc.SetTrailer(ctx, metadata.Pairs("x-t", "2")))
				return &testpb.EchoResponse{}, nil
			},
			header:  metadata.MD{"x-h": {"1", "2"}, "x-other": {"o"}},
			trailer: metadata.MD{"x-t": {"1", "2"}},
			errs:    map[string]codes.Code{"SetHeader 1": codes.OK, "SetHeader 2": codes.OK, "SetTrailer 1": codes.OK, "SetTrailer 2": codes.OK},
		},
		{
			name: "SendHeader sends what SetHeader set; later headers fail, trailers do not",
			handler: func(ctx context.Context, rec *serverCalls) (*testpb.EchoResponse, error) {
				rec.do("SetHeader", grpc.SetHeader(ctx, metadata.Pairs("x-set", "s")))
				rec.do("SendHeader", grpc.SendHeader(ctx, metadata.Pairs("x-sent", "t")))
				rec.do("SendHeader again", grpc.SendHeader(ctx, metadata.Pairs("x-again", "a")))
				rec.do("SetHeader after", grpc.SetHeader(ctx, metadata.Pairs("x-late", "l")))
				rec.do("SetTrailer after", grpc.SetTrailer(ctx, metadata.Pairs("x-t", "1")))
				return &testpb.EchoResponse{}, nil
			},
			header:  metadata.MD{"x-set": {"s"}, "x-sent": {"t"}},
			trailer: metadata.MD{"x-t": {"1"}},
			errs: map[string]codes.Code{"SetHeader": codes.OK, "SendHeader": codes.OK,
				"SendHeader again": codes.Internal, "SetHeader after": codes.Internal, "SetTrailer after": codes.OK},
		},
		{
			name: "a failure keeps its header and trailer",
			handler: func(ctx context.Context, rec *serverCalls) (*testpb.EchoResponse, error) {
				rec.do("SetHeader", grpc.SetHeader(ctx, metadata.Pairs("x-h", "1")))
				rec.do("SetTrailer", grpc.SetTrailer(ctx, metadata.Pairs("x-t", "1")))
				return nil, notFound
			},
			code:    codes.NotFound,
			header:  metadata.MD{"x-h": {"1"}},
			trailer: metadata.MD{"x-t": {"1"}},
			errs:    map[string]codes.Code{"SetHeader": codes.OK, "SetTrailer": codes.OK},
		},
		{
			name: "a failure after SendHeader",
			handler: func(ctx context.Context, rec *serverCalls) (*testpb.EchoResponse, error) {
				rec.do("SendHeader", grpc.SendHeader(ctx, metadata.Pairs("x-h", "1")))
				rec.do("SetTrailer", grpc.SetTrailer(ctx, metadata.Pairs("x-t", "1")))
				return nil, notFound
			},
			code:    codes.NotFound,
			header:  metadata.MD{"x-h": {"1"}},
			trailer: metadata.MD{"x-t": {"1"}},
			errs:    map[string]codes.Code{"SendHeader": codes.OK, "SetTrailer": codes.OK},
		},
		{
			name: "grpc.Method is the call's path",
			handler: func(ctx context.Context, rec *serverCalls) (*testpb.EchoResponse, error) {
				m, ok := grpc.Method(ctx)
				if !ok {
					return nil, errors.New("grpc.Method found no stream")
				}
				rec.do("SetHeader", grpc.SetHeader(ctx, metadata.Pairs("method", m)))
				return &testpb.EchoResponse{}, nil
			},
			header: metadata.MD{"method": {echo.Path()}},
			errs:   map[string]codes.Code{"SetHeader": codes.OK},
		},
		{
			name: "without ResponseMetadata the call keeps neither",
			handler: func(ctx context.Context, rec *serverCalls) (*testpb.EchoResponse, error) {
				rec.do("SetHeader", grpc.SetHeader(ctx, metadata.Pairs("x-h", "1")))
				rec.do("SetTrailer", grpc.SetTrailer(ctx, metadata.Pairs("x-t", "1")))
				return &testpb.EchoResponse{}, nil
			},
			noMD: true,
			errs: map[string]codes.Code{"SetHeader": codes.OK, "SetTrailer": codes.OK},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			rec := &serverCalls{}
			reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
				return tc.handler(ctx, rec)
			})
			r := reactortest.NewReactor(t, b, reactor.Config{})
			p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{ResponseMetadata: !tc.noMD})
			reactortest.Flush(t, r)

			require.Equal(t, tc.code, status.Code(p.Err()), "%v", p.Err())
			require.Equal(t, tc.header, p.Header())
			require.Equal(t, tc.trailer, p.Trailer())
			if tc.code != codes.OK {
				var ce *calls.Error
				require.ErrorAs(t, p.Err(), &ce)
				require.Equal(t, tc.trailer, ce.Trailer())
			}
			for name, code := range tc.errs {
				require.Equal(t, code, status.Code(rec.err(name)), "%s: %v", name, rec.err(name))
			}
			require.Len(t, rec.errs, len(tc.errs))
		})
	}
}

// TestBackendServerMetadataAfterReturn checks that the stream of a call outlives neither its
// handler nor the call: header and trailer set afterwards fail and reach no call.
func TestBackendServerMetadataAfterReturn(t *testing.T) {
	b := reactortest.NewBackend()
	var kept context.Context
	reactortest.Handle(b, echo, func(ctx context.Context, _ *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		kept = ctx
		return &testpb.EchoResponse{}, nil
	})
	r := reactortest.NewReactor(t, b, reactor.Config{})
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{ResponseMetadata: true})
	reactortest.Flush(t, r)
	require.NoError(t, p.Err())

	md := metadata.Pairs("x-late", "1")
	for name, err := range map[string]error{
		"SetHeader":  grpc.SetHeader(kept, md),
		"SendHeader": grpc.SendHeader(kept, md),
		"SetTrailer": grpc.SetTrailer(kept, md),
	} {
		require.Equal(t, codes.Internal, status.Code(err), "%s after the handler returned: %v", name, err)
	}
	require.Empty(t, p.Header())
	require.Empty(t, p.Trailer())
	m, ok := grpc.Method(kept)
	require.True(t, ok)
	require.Equal(t, echo.Path(), m)
}
