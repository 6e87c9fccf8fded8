package main

import (
	"context"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/emptypb"

	"github.com/trixnew/prpc/calls"
	goldencalls "github.com/trixnew/prpc/cmd/protoc-gen-prpc/internal/golden/calls"
	"github.com/trixnew/prpc/cmd/protoc-gen-prpc/internal/golden/editions"
	"github.com/trixnew/prpc/cmd/protoc-gen-prpc/internal/golden/editions/editionsprpc"
	"github.com/trixnew/prpc/cmd/protoc-gen-prpc/internal/golden/multi"
	"github.com/trixnew/prpc/cmd/protoc-gen-prpc/internal/golden/multi/multiprpc"
	goldenstreaming "github.com/trixnew/prpc/cmd/protoc-gen-prpc/internal/golden/streaming"
	"github.com/trixnew/prpc/cmd/protoc-gen-prpc/internal/golden/streaming/streamingprpc"
	"github.com/trixnew/prpc/internal/testserver"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// The tests in this file run the golden set's generated code, which this test binary links.

func paths(ds []calls.Descriptor) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.Path()
	}
	return out
}

// TestGeneratedMethods checks that each service's method list holds its methods, unary and
// streaming, in the order of the .proto, and is a new slice on each call.
func TestGeneratedMethods(t *testing.T) {
	for _, tc := range []struct {
		name    string
		methods func() []calls.Descriptor
		want    []string
	}{
		{"Lobby", multiprpc.LobbyMethods, []string{
			"/golden.multi.Lobby/Join", "/golden.multi.Lobby/Ping", "/golden.multi.Lobby/Leave",
			"/golden.multi.Lobby/Kick", "/golden.multi.Lobby/Watch", "/golden.multi.Lobby/Upload",
			"/golden.multi.Lobby/Chat", "/golden.multi.Lobby/OldJoin", "/golden.multi.Lobby/Uncommented",
		}},
		//lint:ignore SA1019 the deprecated service is part of the golden set
		{"Legacy", multiprpc.LegacyMethods, []string{"/golden.multi.Legacy/Join", "/golden.multi.Legacy/Rejoin"}},
		{"Foo", multiprpc.FooMethods, []string{"/golden.multi.Foo/BarBaz"}},
		{"FooBar", multiprpc.FooBarMethods, []string{"/golden.multi.FooBar/Baz"}},
		{"select", multiprpc.SelectMethods, []string{"/golden.multi.select/func", "/golden.multi.select/go", "/golden.multi.select/type"}},
		{"Matchmaker", multiprpc.MatchmakerMethods, []string{"/golden.multi.second.Matchmaker/Match"}},
		{"Scores", editionsprpc.ScoresMethods, []string{"/golden.editions.Scores/Top", "/golden.editions.Scores/Submit"}},
		{"Feed", streamingprpc.FeedMethods, []string{"/golden.streaming.Feed/Subscribe", "/golden.streaming.Feed/Chat", "/golden.streaming.Feed/Publish"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.methods()
			require.Equal(t, tc.want, paths(got))
			got[0] = nil
			require.Equal(t, tc.want, paths(tc.methods()), "a change to one call's slice shows in the next")
		})
	}
}

// TestGeneratedPolicies checks that each service's policies mark exactly the methods whose
// idempotency_level is NO_SIDE_EFFECTS or IDEMPOTENT, set nothing else, and are a new slice on
// each call.
func TestGeneratedPolicies(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policies func() []reactor.MethodPolicy
		want     []calls.Descriptor
	}{
		{"Lobby", multiprpc.LobbyPolicies, []calls.Descriptor{multiprpc.Lobby_Ping, multiprpc.Lobby_Leave}},
		//lint:ignore SA1019 the deprecated service is part of the golden set
		{"Legacy", multiprpc.LegacyPolicies, []calls.Descriptor{multiprpc.Legacy_Join}},
		{"Foo", multiprpc.FooPolicies, nil},
		{"Matchmaker", multiprpc.MatchmakerPolicies, []calls.Descriptor{multiprpc.Matchmaker_Match}},
		{"Scores", editionsprpc.ScoresPolicies, []calls.Descriptor{editionsprpc.Scores_Top}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want []reactor.MethodPolicy
			for _, m := range tc.want {
				want = append(want, reactor.MethodPolicy{Method: m, Idempotent: true})
			}
			got := tc.policies()
			require.Equal(t, want, got)
			if len(got) > 0 {
				got[0].Timeout = time.Second
				require.Equal(t, want, tc.policies(), "a change to one call's slice shows in the next")
			}
		})
	}
}

// TestGeneratedConfig checks that a reactor that dials takes the generated lists as they are,
// with a retry policy for the idempotent methods, and after the override the package
// documentation shows.
func TestGeneratedConfig(t *testing.T) {
	policies := multiprpc.LobbyPolicies()
	for i := range policies {
		policies[i].Timeout = 200 * time.Millisecond
	}
	policies = append(policies, reactor.MethodPolicy{Method: multiprpc.Lobby_Join, Critical: true})
	r, err := reactor.New(reactor.Config{
		Target:      "127.0.0.1:1", // never called
		Credentials: reactor.Insecure(),
		Methods:     multiprpc.LobbyMethods(),
		Policies:    policies,
		Retry:       reactor.RetryPolicy{MaxAttempts: 4},
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	require.NoError(t, r.Close(ctx))
}

// TestGeneratedClients calls through the generated clients, against handlers registered for
// the generated descriptors: each call reaches its method's path with the request's type,
// including a message of another package, google.protobuf.Empty, a method named like a Go
// keyword and a method of an editions file.
func TestGeneratedClients(t *testing.T) {
	b := reactortest.NewBackend()
	reactortest.Handle(b, multiprpc.Lobby_Join, func(_ context.Context, req *multi.JoinRequest) (*multi.JoinResponse, error) {
		return &multi.JoinResponse{Game: req.GetPlayer() + "@" + req.GetRegion()}, nil
	})
	reactortest.Handle(b, multiprpc.Lobby_Leave, func(_ context.Context, req *goldencalls.Ticket) (*emptypb.Empty, error) {
		if req.GetId() != "t-1" {
			return nil, status.Errorf(codes.InvalidArgument, "ticket %q", req.GetId())
		}
		return &emptypb.Empty{}, nil
	})
	reactortest.Handle(b, multiprpc.Lobby_Ping, func(context.Context, *emptypb.Empty) (*emptypb.Empty, error) {
		return &emptypb.Empty{}, nil
	})
	reactortest.Handle(b, multiprpc.Select_Go, func(_ context.Context, req *multi.KickRequest) (*multi.KickResponse, error) {
		return &multi.KickResponse{}, nil
	})
	reactortest.Handle(b, editionsprpc.Scores_Top, func(_ context.Context, req *editions.TopRequest) (*editions.TopResponse, error) {
		return &editions.TopResponse{Scores: []*editions.Score{{Player: "steve", Points: proto.Int64(int64(req.GetLimit()))}}}, nil
	})
	methods := append(multiprpc.LobbyMethods(), multiprpc.SelectMethods()...)
	methods = append(methods, editionsprpc.ScoresMethods()...)
	r := reactortest.NewReactor(t, b, reactor.Config{Methods: methods})

	lobby := multiprpc.NewLobbyClient(r)
	var game string
	var left, pinged, went bool
	var top *editions.TopResponse
	region := "eu"
	lobby.Join(&multi.JoinRequest{Player: "steve", Region: &region}, nil).Then(func(resp *multi.JoinResponse) { game = resp.GetGame() })
	lobby.Leave(&goldencalls.Ticket{Id: "t-1"}, nil).Then(func(*emptypb.Empty) { left = true })
	lobby.Ping(&emptypb.Empty{}, &calls.Options{Timeout: time.Second}).Then(func(*emptypb.Empty) { pinged = true })
	multiprpc.NewSelectClient(r).Go(&multi.KickRequest{}, nil).Then(func(*multi.KickResponse) { went = true })
	editionsprpc.NewScoresClient(r).Top(&editions.TopRequest{Limit: 7}, nil).Then(func(resp *editions.TopResponse) { top = resp })
	// Kick has no handler: the call reaches the backend, which answers Unimplemented.
	kick := lobby.Kick(&multi.KickRequest{}, nil)
	// The callback form: one callback, no promise; a rejection is returned and reaches it too.
	var goGame string
	var goRuns int
	require.NoError(t, lobby.GoJoin(&multi.JoinRequest{Player: "alex"}, nil, func(resp *multi.JoinResponse, err error) {
		require.NoError(t, err)
		goGame = resp.GetGame()
		goRuns++
	}))
	var rejected error
	err := lobby.GoLeave(nil, nil, func(_ *emptypb.Empty, err error) { rejected = err })
	require.ErrorIs(t, err, calls.ErrInvalidArgument)
	reactortest.Flush(t, r)
	require.Equal(t, "alex@", goGame)
	require.Equal(t, 1, goRuns)
	require.Same(t, err, rejected)

	require.Equal(t, "steve@eu", game)
	require.True(t, left)
	require.True(t, pinged)
	require.True(t, went)
	require.Equal(t, int64(7), top.GetScores()[0].GetPoints())
	require.Equal(t, calls.Failed, kick.State())
	for _, path := range []string{
		"/golden.multi.Lobby/Join", "/golden.multi.Lobby/Leave", "/golden.multi.Lobby/Ping",
		"/golden.multi.select/go", "/golden.editions.Scores/Top", "/golden.multi.Lobby/Kick",
	} {
		want := 1
		if path == "/golden.multi.Lobby/Join" {
			want = 2 // Join and GoJoin
		}
		require.Equal(t, want, b.Calls(path), path)
	}
}

// TestGeneratedNewClientNil checks that a constructor given no reactor panics at once, naming
// itself, rather than at the first call.
func TestGeneratedNewClientNil(t *testing.T) {
	require.PanicsWithValue(t, "prpc: NewLobbyClient with a nil *reactor.Reactor", func() { multiprpc.NewLobbyClient(nil) })
	require.PanicsWithValue(t, "prpc: NewScoresClient with a nil *reactor.Reactor", func() { editionsprpc.NewScoresClient(nil) })
	require.PanicsWithValue(t, "prpc: NewFeedClient with a nil *reactor.Reactor", func() { streamingprpc.NewFeedClient(nil) })
}

// feedServer serves golden.streaming.Feed's Subscribe (two events named after the request's,
// then OK) and Publish (a Summary that counts the events sent, once the client has closed its
// side), for TestGeneratedFeedAgainstServer. Its descriptor is written by hand: the golden set
// has no grpc-go code.
var feedServer = grpc.ServiceDesc{
	ServiceName: "golden.streaming.Feed",
	Streams: []grpc.StreamDesc{
		{StreamName: "Subscribe", ServerStreams: true, Handler: func(_ any, stream grpc.ServerStream) error {
			req := new(goldenstreaming.Event)
			if err := stream.RecvMsg(req); err != nil {
				return err
			}
			for i := range 2 {
				if err := stream.SendMsg(&goldenstreaming.Event{Name: req.GetName() + strconv.Itoa(i)}); err != nil {
					return err
				}
			}
			return nil
		}},
		{StreamName: "Publish", ClientStreams: true, Handler: func(_ any, stream grpc.ServerStream) error {
			var n int64
			for {
				err := stream.RecvMsg(new(goldenstreaming.Event))
				if errors.Is(err, io.EOF) {
					return stream.SendMsg(&goldenstreaming.Summary{Count: n})
				}
				if err != nil {
					return err
				}
				n++
			}
		}},
	},
}

// TestGeneratedFeedAgainstServer opens the golden set's streams of a service with streaming
// methods only against a real grpc-go server: a server stream (Subscribe) and a client stream
// (Publish), whose one response is its stream's one message, each delivered in Tick and ended
// once, last, with OK.
func TestGeneratedFeedAgainstServer(t *testing.T) {
	srv := testserver.Start(t, testserver.WithServices(func(reg grpc.ServiceRegistrar) { reg.RegisterService(&feedServer, nil) }))
	r, err := reactor.New(reactor.Config{
		Target:      srv.Addr(),
		Credentials: reactor.Insecure(),
		Methods:     streamingprpc.FeedMethods(),
	})
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, r.Close(ctx))
	})
	feed := streamingprpc.NewFeedClient(r)

	inTick := false
	var events []string
	var counts []int64
	var ends []error
	onEnd := func(err error) {
		require.True(t, inTick, "OnEnd outside Tick")
		ends = append(ends, err)
	}
	feed.Subscribe(&goldenstreaming.Event{Name: "spawn"}, nil, calls.StreamHandler[*goldenstreaming.Event, *goldenstreaming.Event]{
		OnMessage: func(e *goldenstreaming.Event) {
			require.True(t, inTick, "OnMessage outside Tick")
			events = append(events, e.GetName())
		},
		OnEnd: onEnd,
	})
	publish := feed.Publish(nil, calls.StreamHandler[*goldenstreaming.Event, *goldenstreaming.Summary]{
		OnMessage: func(s *goldenstreaming.Summary) {
			require.True(t, inTick, "OnMessage outside Tick")
			counts = append(counts, s.GetCount())
		},
		OnEnd: onEnd,
	})
	for _, name := range []string{"a", "b", "c"} {
		require.NoError(t, publish.Send(&goldenstreaming.Event{Name: name}))
	}
	require.NoError(t, publish.CloseSend())
	tickUntil(t, r, &inTick, func() bool { return len(ends) == 2 })

	require.Equal(t, []string{"spawn0", "spawn1"}, events)
	require.Equal(t, []int64{3}, counts)
	require.Equal(t, []error{nil, nil}, ends)
}
