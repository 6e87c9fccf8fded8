package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/internal/testcerts"
)

func TestServiceNameMatchesDescriptor(t *testing.T) {
	require.Equal(t, networkpb.DataService_ServiceDesc.ServiceName, ServiceName)
}

func TestHealthServing(t *testing.T) {
	srv := startServer(t, Options{})
	hc := healthpb.NewHealthClient(dial(t, srv.Addr(), nil))

	for _, service := range []string{"", ServiceName} {
		resp, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: service})
		require.NoError(t, err, "service %q", service)
		require.Equal(t, healthpb.HealthCheckResponse_SERVING, resp.GetStatus(), "service %q", service)
	}
	_, err := hc.Check(t.Context(), &healthpb.HealthCheckRequest{Service: "no.such.Service"})
	require.Equal(t, codes.NotFound, status.Code(err))
}

func TestReflectionListsDataService(t *testing.T) {
	srv := startServer(t, Options{})
	rc := reflectionpb.NewServerReflectionClient(dial(t, srv.Addr(), nil))

	stream, err := rc.ServerReflectionInfo(t.Context())
	require.NoError(t, err)
	require.NoError(t, stream.Send(&reflectionpb.ServerReflectionRequest{
		MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{},
	}))
	resp, err := stream.Recv()
	require.NoError(t, err)
	require.NoError(t, stream.CloseSend())

	var names []string
	for _, s := range resp.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	require.Contains(t, names, ServiceName)
	require.Contains(t, names, healthpb.Health_ServiceDesc.ServiceName)
}

func TestGetMissingPlayer(t *testing.T) {
	_, client, _ := startWithClient(t)
	resp, err := client.GetPlayer(t.Context(), &networkpb.GetPlayerRequest{Xuid: "nobody"})
	require.NoError(t, err)
	require.False(t, resp.GetFound())
	require.Nil(t, resp.GetPlayer())
}

func TestSaveGetRoundTrip(t *testing.T) {
	_, client, _ := startWithClient(t)
	ctx := t.Context()
	player := &networkpb.Player{
		Xuid:            "2535400000000001",
		Name:            "Alex",
		Level:           12,
		Coins:           4200,
		LastSeen:        timestamppb.New(time.Date(2025, 3, 14, 15, 9, 26, 535897932, time.UTC)),
		PlaytimeSeconds: 86400,
	}

	for wantVersion := int64(1); wantVersion <= 3; wantVersion++ {
		player.Level++
		saved, err := client.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: player})
		require.NoError(t, err)
		require.Equal(t, wantVersion, saved.GetVersion())

		got, err := client.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: player.GetXuid()})
		require.NoError(t, err)
		require.True(t, got.GetFound())
		want := proto.CloneOf(player)
		want.Version = wantVersion
		requireProtoEqual(t, want, got.GetPlayer())
	}
}

func TestSaveSetsMissingLastSeen(t *testing.T) {
	_, client, _ := startWithClient(t)
	before := time.Now()
	_, err := client.SavePlayer(t.Context(), &networkpb.SavePlayerRequest{Player: &networkpb.Player{Xuid: "x"}})
	require.NoError(t, err)

	got, err := client.GetPlayer(t.Context(), &networkpb.GetPlayerRequest{Xuid: "x"})
	require.NoError(t, err)
	require.NotNil(t, got.GetPlayer().GetLastSeen())
	require.False(t, got.GetPlayer().GetLastSeen().AsTime().Before(before.Truncate(time.Second)))
}

func TestInvalidArgument(t *testing.T) {
	longXUID := strings.Repeat("9", MaxXUIDBytes+1)
	tests := []struct {
		name    string
		call    func(context.Context, networkpb.DataServiceClient) error
		wantMsg string
	}{
		{"get empty xuid", getPlayer(""), "xuid"},
		{"get long xuid", getPlayer(longXUID), "xuid"},
		{"save nil player", savePlayer(nil), "player"},
		{"save empty xuid", savePlayer(&networkpb.Player{Name: "anon"}), "xuid"},
		{"save long xuid", savePlayer(&networkpb.Player{Xuid: longXUID}), "xuid"},
		{"save long name", savePlayer(&networkpb.Player{Xuid: "x", Name: strings.Repeat("n", MaxNameBytes+1)}), "name"},
		{"save long multibyte name", savePlayer(&networkpb.Player{Xuid: "x", Name: strings.Repeat("é", 17)}), "name"},
		{"save negative level", savePlayer(&networkpb.Player{Xuid: "x", Level: -1}), "level"},
		{"save negative coins", savePlayer(&networkpb.Player{Xuid: "x", Coins: -5}), "coins"},
		{"save negative playtime", savePlayer(&networkpb.Player{Xuid: "x", PlaytimeSeconds: -1}), "playtime_seconds"},
		{"save invalid last_seen", savePlayer(&networkpb.Player{Xuid: "x", LastSeen: &timestamppb.Timestamp{Nanos: -1}}), "last_seen"},
		{"leaderboard negative limit", leaderboard(-1), "limit"},
		{"leaderboard limit too large", leaderboard(MaxLeaderboardLimit + 1), "limit"},
	}

	_, client, _ := startWithClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(t.Context(), client)
			st, ok := status.FromError(err)
			require.True(t, ok, "not a status error: %v", err)
			require.Equal(t, codes.InvalidArgument, st.Code(), "error: %v", err)
			require.Contains(t, st.Message(), tt.wantMsg)
		})
	}

	// Nothing above may have been stored.
	resp, err := client.GetLeaderboard(t.Context(), &networkpb.GetLeaderboardRequest{})
	require.NoError(t, err)
	require.Empty(t, resp.GetPlayers())
}

func TestLimitsAreInclusive(t *testing.T) {
	tests := []struct {
		name string
		call func(context.Context, networkpb.DataServiceClient) error
	}{
		{"xuid at limit", savePlayer(&networkpb.Player{Xuid: strings.Repeat("9", MaxXUIDBytes)})},
		{"name at limit", savePlayer(&networkpb.Player{Xuid: "x", Name: strings.Repeat("é", MaxNameBytes/2)})},
		{"zero values", savePlayer(&networkpb.Player{Xuid: "y"})},
		{"get xuid at limit", getPlayer(strings.Repeat("9", MaxXUIDBytes))},
		{"leaderboard limit 1", leaderboard(1)},
		{"leaderboard max limit", leaderboard(MaxLeaderboardLimit)},
	}
	_, client, _ := startWithClient(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, tt.call(t.Context(), client))
		})
	}
}

func TestLeaderboard(t *testing.T) {
	_, client, _ := startWithClient(t)
	ctx := t.Context()

	// 12 players: coins tie in pairs, levels tie in some pairs, and two
	// players tie on both so only the xuid orders them.
	var want []string
	for i := range 12 {
		xuid := fmt.Sprintf("p%02d", i)
		p := &networkpb.Player{Xuid: xuid, Coins: int64(1000 - 100*(i/2)), Level: int32(50 - i)}
		if i == 10 || i == 11 {
			p.Level = 1
		}
		_, err := client.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: p})
		require.NoError(t, err)
		want = append(want, xuid)
	}
	// Saved out of order and with equal ranks resolved by xuid.
	_, err := client.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: &networkpb.Player{Xuid: "a-first", Coins: 1000, Level: 50}})
	require.NoError(t, err)
	want = append([]string{"a-first"}, want...)

	tests := []struct {
		name  string
		limit int32
		want  []string
	}{
		{name: "default", limit: 0, want: want[:DefaultLeaderboardLimit]},
		{name: "three", limit: 3, want: want[:3]},
		{name: "more than stored", limit: MaxLeaderboardLimit, want: want},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := client.GetLeaderboard(ctx, &networkpb.GetLeaderboardRequest{Limit: tt.limit})
			require.NoError(t, err)
			var got []string
			for _, p := range resp.GetPlayers() {
				got = append(got, p.GetXuid())
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestConcurrentSavesAndStats(t *testing.T) {
	const clients, savesEach = 8, 20
	srv, client, _ := startWithClient(t)
	ctx := t.Context()

	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for i := range savesEach {
				p := &networkpb.Player{Xuid: "shared", Coins: int64(c*savesEach + i)}
				if _, err := client.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: p}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()

	resp, err := client.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: "shared"})
	require.NoError(t, err)
	require.EqualValues(t, clients*savesEach, resp.GetPlayer().GetVersion())
	_, err = client.GetLeaderboard(ctx, &networkpb.GetLeaderboardRequest{})
	require.NoError(t, err)
	_, err = client.GetLeaderboard(ctx, &networkpb.GetLeaderboardRequest{Limit: -1})
	require.Error(t, err)

	require.Equal(t, Stats{Gets: 1, Saves: clients * savesEach, LeaderboardCalls: 2}, srv.Stats())
}

func TestFileDatabaseSurvivesRestart(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "players.db")
	ctx := t.Context()

	first, err := Start(ctx, Options{DBPath: dbPath})
	require.NoError(t, err)
	conn := dial(t, first.Addr(), nil)
	_, err = networkpb.NewDataServiceClient(conn).SavePlayer(ctx,
		&networkpb.SavePlayerRequest{Player: &networkpb.Player{Xuid: "x", Name: "persistent"}})
	require.NoError(t, err)
	require.NoError(t, first.Shutdown(ctx))

	second := startServer(t, Options{DBPath: dbPath})
	client := networkpb.NewDataServiceClient(dial(t, second.Addr(), nil))
	resp, err := client.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: "x"})
	require.NoError(t, err)
	require.True(t, resp.GetFound())
	require.Equal(t, "persistent", resp.GetPlayer().GetName())
	require.EqualValues(t, 1, resp.GetPlayer().GetVersion())
}

func TestGracefulShutdownWaitsForStreams(t *testing.T) {
	srv, client, conn := startWithClient(t)
	ctx := t.Context()

	// An open health Watch stream is a call in flight that graceful
	// shutdown has to wait for.
	watchCtx, cancelWatch := context.WithCancel(ctx)
	defer cancelWatch()
	watch, err := healthpb.NewHealthClient(conn).Watch(watchCtx, &healthpb.HealthCheckRequest{Service: ServiceName})
	require.NoError(t, err)
	update, err := watch.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_SERVING, update.GetStatus())

	shutdownErr := make(chan error, 1)
	go func() { shutdownErr <- srv.Shutdown(ctx) }()

	// Health turns NOT_SERVING before anything is torn down.
	update, err = watch.Recv()
	require.NoError(t, err)
	require.Equal(t, healthpb.HealthCheckResponse_NOT_SERVING, update.GetStatus())
	select {
	case err := <-shutdownErr:
		t.Fatalf("Shutdown returned %v while a stream was still open", err)
	default:
	}

	cancelWatch()
	require.NoError(t, <-shutdownErr)
	<-srv.Done()
	require.NoError(t, srv.Err())

	_, err = client.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: "x"})
	require.Equal(t, codes.Unavailable, status.Code(err))

	// Stopping again in any way is harmless.
	srv.Stop()
	srv.GracefulStop()
	require.NoError(t, srv.Shutdown(ctx))
}

func TestShutdownFallsBackToStop(t *testing.T) {
	srv, _, conn := startWithClient(t)
	watch, err := healthpb.NewHealthClient(conn).Watch(t.Context(), &healthpb.HealthCheckRequest{})
	require.NoError(t, err)
	_, err = watch.Recv()
	require.NoError(t, err)

	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	require.ErrorIs(t, srv.Shutdown(ctx), context.Canceled)

	// The forced stop ends the stream, possibly after the NOT_SERVING update.
	for {
		if _, err := watch.Recv(); err != nil {
			require.NotEqual(t, codes.OK, status.Code(err))
			break
		}
	}
}

func TestStopIsImmediate(t *testing.T) {
	srv, client, _ := startWithClient(t)
	_, err := client.GetLeaderboard(t.Context(), &networkpb.GetLeaderboardRequest{})
	require.NoError(t, err)

	srv.Stop()
	<-srv.Done()
	require.NoError(t, srv.Err())
	_, err = client.GetLeaderboard(t.Context(), &networkpb.GetLeaderboardRequest{})
	require.Equal(t, codes.Unavailable, status.Code(err))
}

func TestStartErrors(t *testing.T) {
	certFile, keyFile := testcerts.NewCA(t, "ca").Server(t).WriteFiles(t, t.TempDir(), "server")
	busy := startServer(t, Options{})
	notPEM := filepath.Join(t.TempDir(), "not-pem.txt")
	require.NoError(t, os.WriteFile(notPEM, []byte("not a certificate\n"), 0o600))

	tests := []struct {
		name string
		opts Options
	}{
		{name: "cert without key", opts: Options{TLSCertFile: certFile}},
		{name: "key without cert", opts: Options{TLSKeyFile: keyFile}},
		{name: "client CA without TLS", opts: Options{ClientCAFile: certFile}},
		{name: "missing cert file", opts: Options{TLSCertFile: certFile + ".missing", TLSKeyFile: keyFile}},
		{name: "missing client CA file", opts: Options{TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: certFile + ".missing"}},
		{name: "client CA file without PEM", opts: Options{TLSCertFile: certFile, TLSKeyFile: keyFile, ClientCAFile: notPEM}},
		{name: "key is not a key", opts: Options{TLSCertFile: certFile, TLSKeyFile: certFile}},
		{name: "bad address", opts: Options{Addr: "127.0.0.1:notaport"}},
		{name: "address in use", opts: Options{Addr: busy.Addr()}},
		{name: "database in missing directory", opts: Options{DBPath: filepath.Join(t.TempDir(), "missing", "players.db")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := Start(t.Context(), tt.opts)
			require.Error(t, err)
			require.Nil(t, srv)
		})
	}
}

// getPlayer returns a call of GetPlayer for xuid.
func getPlayer(xuid string) func(context.Context, networkpb.DataServiceClient) error {
	return func(ctx context.Context, c networkpb.DataServiceClient) error {
		_, err := c.GetPlayer(ctx, &networkpb.GetPlayerRequest{Xuid: xuid})
		return err
	}
}

// savePlayer returns a call of SavePlayer for p.
func savePlayer(p *networkpb.Player) func(context.Context, networkpb.DataServiceClient) error {
	return func(ctx context.Context, c networkpb.DataServiceClient) error {
		_, err := c.SavePlayer(ctx, &networkpb.SavePlayerRequest{Player: p})
		return err
	}
}

// leaderboard returns a call of GetLeaderboard with limit.
func leaderboard(limit int32) func(context.Context, networkpb.DataServiceClient) error {
	return func(ctx context.Context, c networkpb.DataServiceClient) error {
		_, err := c.GetLeaderboard(ctx, &networkpb.GetLeaderboardRequest{Limit: limit})
		return err
	}
}
