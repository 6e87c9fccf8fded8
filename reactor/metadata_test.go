package reactor_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
)

func TestMetadataLowercased(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	_, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "md"}, &calls.Options{Metadata: metadata.MD{
		"X-Request-ID":  {"abc-123"},
		"Authorization": {"Bearer token"},
		"x-multi":       {"one", "two"},
		"Trace.Span_ID": {"7"},
	}})
	require.NoError(t, err)
	require.Equal(t, "abc-123", resp.GetMetadata()["x-request-id"])
	require.Equal(t, "Bearer token", resp.GetMetadata()["authorization"])
	require.Equal(t, "7", resp.GetMetadata()["trace.span_id"])

	md := srv.LastMetadata()
	require.Equal(t, []string{"abc-123"}, md.Get("x-request-id"))
	require.Equal(t, []string{"one", "two"}, md["x-multi"])
	for k := range md {
		require.Equal(t, strings.ToLower(k), k, "key %q arrived with uppercase", k)
	}
}

func TestBinaryMetadataRoundTrips(t *testing.T) {
	srv := testserver.Start(t)
	// The default handler echoes metadata into a proto3 string map, which cannot hold
	// arbitrary bytes; the server records the metadata before calling this handler.
	srv.SetHandler(func(context.Context, *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: "bin"}, nil
	})
	r := newReactor(t, srv, reactor.Config{})
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	tests := []struct {
		name string
		md   metadata.MD
	}{
		{"every byte", metadata.MD{"x-data-bin": {string(all)}}},
		{"uppercase key", metadata.MD{"X-Blob-Bin": {"\r\n\x00\x7f\xff"}}},
		{"several values", metadata.MD{"x-multi-bin": {"\x00", "\xfe\xff", "plain"}}},
		{"invalid UTF-8", metadata.MD{"x-utf-bin": {"\xc3\x28"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := roundTrip(t, r, &testpb.EchoRequest{}, &calls.Options{Metadata: tt.md})
			require.NoError(t, err)
			for key, vals := range tt.md {
				require.Equal(t, vals, srv.LastMetadata()[strings.ToLower(key)])
			}
		})
	}
}

func TestInvalidMetadataNeverSent(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{Limits: limits.Limits{MaxMetadataBytes: 1024}})
	const secret = "Bearer s3cr3t"
	big := strings.Repeat("v", 1024)

	tests := []struct {
		name string
		md   metadata.MD
		want error
	}{
		{"colliding keys", metadata.MD{"X-Key": {secret}, "x-key": {secret}}, calls.ErrInvalidArgument},
		{"empty key", metadata.MD{"": {secret}}, calls.ErrInvalidArgument},
		{"key with space", metadata.MD{"x key": {secret}}, calls.ErrInvalidArgument},
		{"key with non-ASCII", metadata.MD{"x-clé": {secret}}, calls.ErrInvalidArgument},
		{"key with Kelvin sign", metadata.MD{"x-\u212Aey": {secret}}, calls.ErrInvalidArgument},
		{"grpc-foo", metadata.MD{"grpc-foo": {secret}}, calls.ErrInvalidArgument},
		{"grpc-timeout", metadata.MD{"grpc-timeout": {"1S"}}, calls.ErrInvalidArgument},
		{"content-type", metadata.MD{"content-type": {"application/json"}}, calls.ErrInvalidArgument},
		{"te", metadata.MD{"te": {"trailers"}}, calls.ErrInvalidArgument},
		{"connection", metadata.MD{"connection": {"close"}}, calls.ErrInvalidArgument},
		{"user-agent", metadata.MD{"user-agent": {secret}}, calls.ErrInvalidArgument},
		{"host", metadata.MD{"host": {secret}}, calls.ErrInvalidArgument},
		{":authority", metadata.MD{":authority": {secret}}, calls.ErrInvalidArgument},
		{"no values", metadata.MD{"x-empty": {}}, calls.ErrInvalidArgument},
		{"CR in value", metadata.MD{"x-v": {secret + "\r"}}, calls.ErrInvalidArgument},
		{"LF in value", metadata.MD{"x-v": {secret + "\n"}}, calls.ErrInvalidArgument},
		{"NUL in value", metadata.MD{"x-v": {secret + "\x00"}}, calls.ErrInvalidArgument},
		{"DEL in value", metadata.MD{"x-v": {secret + "\x7f"}}, calls.ErrInvalidArgument},
		{"non-ASCII in value", metadata.MD{"x-v": {secret + "é"}}, calls.ErrInvalidArgument},
		{"over MaxMetadataBytes", metadata.MD{"x-big": {secret + big}}, calls.ErrTooLarge},
		{"bin over MaxMetadataBytes", metadata.MD{"x-big-bin": {secret + big[:800]}}, calls.ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := srv.Calls()
			p, resp, err := roundTrip(t, r, &testpb.EchoRequest{Message: "never"}, &calls.Options{Metadata: tt.md})
			require.Nil(t, resp)
			require.ErrorIs(t, err, tt.want)
			require.Equal(t, status.Code(tt.want), status.Code(err))
			require.Equal(t, calls.Failed, p.State())
			require.Nil(t, p.Header())
			require.Nil(t, p.Trailer())
			require.NotContains(t, err.Error(), "s3cr3t", "errors must not reveal metadata values")

			// A valid call afterwards goes through, and is the only one the server saw.
			_, resp, err = roundTrip(t, r, &testpb.EchoRequest{Message: "ok"}, &calls.Options{Metadata: metadata.MD{"x-ok": {"1"}}})
			require.NoError(t, err)
			require.Equal(t, "ok", resp.GetMessage())
			require.Equal(t, before+1, srv.Calls(), "the invalid call must not reach the server")
		})
	}
}

func TestInvalidMetadataFailsAtSubmission(t *testing.T) {
	srv := testserver.Start(t)
	r := newReactor(t, srv, reactor.Config{})
	p := reactor.Call(r, echo, &testpb.EchoRequest{}, &calls.Options{Metadata: metadata.MD{"grpc-foo": {"x"}}})
	require.Equal(t, calls.Failed, p.State(), "the promise is failed when Call returns")
	require.ErrorIs(t, p.Err(), calls.ErrInvalidArgument)
	var got error
	p.OnError(func(err error) { got = err })
	waitFor(t, r, func() bool { return got != nil })
	require.Same(t, p.Err(), got)
}
