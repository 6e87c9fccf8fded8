package main

import (
	"bytes"
	"context"
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/trixnew/prpc/examples/dataservice/server"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunServesUntilCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var logs bytes.Buffer

	err := run(ctx, []string{"-addr", "127.0.0.1:0"}, &logs, func(srv *server.Server) {
		conn, err := grpc.NewClient("passthrough:///"+srv.Addr(), grpc.WithTransportCredentials(insecure.NewCredentials()))
		require.NoError(t, err)
		defer conn.Close()
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: server.ServiceName})
		require.NoError(t, err)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus())
		cancel() // what SIGINT does
	})
	require.NoError(t, err)
	require.Contains(t, logs.String(), "dataservice listening")
	require.Contains(t, logs.String(), "dataservice stopped")
}

func TestRunRejectsBadArguments(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{name: "unknown flag", args: []string{"-nope"}},
		{name: "positional argument", args: []string{"extra"}},
		{name: "key without cert", args: []string{"-addr", "127.0.0.1:0", "-tls-key", "k.pem"}},
		{name: "bad address", args: []string{"-addr", "127.0.0.1:notaport"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(t.Context(), tt.args, &out, func(*server.Server) {
				t.Error("server started")
			})
			require.Error(t, err)
		})
	}
}

func TestRunHelp(t *testing.T) {
	var out bytes.Buffer
	err := run(t.Context(), []string{"-h"}, &out, nil)
	require.ErrorIs(t, err, flag.ErrHelp)
	require.True(t, strings.Contains(out.String(), "-client-ca"), out.String())
}
