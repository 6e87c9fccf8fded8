package store

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// backends lists the two kinds of database every behaviour is checked on.
var backends = []struct {
	name string
	path func(t *testing.T) string
}{
	{name: "memory", path: func(*testing.T) string { return "" }},
	{name: "file", path: func(t *testing.T) string { return filepath.Join(t.TempDir(), "players.db") }},
}

// openStore opens a store for the backend and closes it when the test ends.
func openStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(t.Context(), path)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, s.Close()) })
	return s
}

// requireProtoEqual fails the test unless want and got are equal messages.
func requireProtoEqual(t *testing.T, want, got proto.Message) {
	t.Helper()
	require.Truef(t, proto.Equal(want, got), "want %v\ngot  %v", want, got)
}

func TestGetMissing(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openStore(t, b.path(t))
			p, found, err := s.Get(t.Context(), "nobody")
			require.NoError(t, err)
			require.False(t, found)
			require.Nil(t, p)
		})
	}
}

func TestSaveGetRoundTrip(t *testing.T) {
	seen := timestamppb.New(time.Date(2025, 6, 1, 12, 30, 0, 123456789, time.UTC))
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openStore(t, b.path(t))
			ctx := t.Context()

			in := &networkpb.Player{
				Xuid: "2535400000000001", Name: "Steve", Level: 7, Coins: 1500,
				LastSeen: seen, PlaytimeSeconds: 3600,
				Version: 99, // ignored by Save
			}
			for wantVersion := int64(1); wantVersion <= 3; wantVersion++ {
				in.Coins += 10
				v, err := s.Save(ctx, in)
				require.NoError(t, err)
				require.Equal(t, wantVersion, v)

				got, found, err := s.Get(ctx, in.Xuid)
				require.NoError(t, err)
				require.True(t, found)
				want := proto.CloneOf(in)
				want.Version = wantVersion
				requireProtoEqual(t, want, got)
			}
			require.EqualValues(t, 99, in.Version, "Save must not modify its argument")
		})
	}
}

func TestSaveDefaultsLastSeen(t *testing.T) {
	now := time.Date(2025, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openStore(t, b.path(t))
			s.now = func() time.Time { return now }

			_, err := s.Save(t.Context(), &networkpb.Player{Xuid: "x"})
			require.NoError(t, err)
			got, found, err := s.Get(t.Context(), "x")
			require.NoError(t, err)
			require.True(t, found)
			require.True(t, got.GetLastSeen().AsTime().Equal(now), "last_seen = %v", got.GetLastSeen().AsTime())
		})
	}
}

func TestSaveRejects(t *testing.T) {
	tests := []struct {
		name   string
		player *networkpb.Player
	}{
		{name: "nil player", player: nil},
		{name: "empty xuid", player: &networkpb.Player{Name: "anon"}},
		{name: "negative level", player: &networkpb.Player{Xuid: "x", Level: -1}},
		{name: "negative coins", player: &networkpb.Player{Xuid: "x", Coins: -1}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openStore(t, b.path(t))
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					_, err := s.Save(t.Context(), tt.player)
					require.Error(t, err)
				})
			}
			_, found, err := s.Get(t.Context(), "x")
			require.NoError(t, err)
			require.False(t, found, "a rejected save must not store anything")
		})
	}
}

func TestTop(t *testing.T) {
	players := []*networkpb.Player{
		{Xuid: "d", Coins: 50, Level: 1},
		{Xuid: "a", Coins: 100, Level: 2},
		{Xuid: "c", Coins: 100, Level: 5},
		{Xuid: "b", Coins: 100, Level: 2},
		{Xuid: "e", Coins: 0, Level: 90},
	}
	wantOrder := []string{"c", "a", "b", "d", "e"}

	tests := []struct {
		name  string
		limit int
		want  []string
	}{
		{name: "all", limit: 100, want: wantOrder},
		{name: "exact", limit: len(wantOrder), want: wantOrder},
		{name: "top two", limit: 2, want: wantOrder[:2]},
		{name: "one", limit: 1, want: wantOrder[:1]},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openStore(t, b.path(t))
			empty, err := s.Top(t.Context(), 10)
			require.NoError(t, err)
			require.Empty(t, empty)

			for _, p := range players {
				_, err := s.Save(t.Context(), p)
				require.NoError(t, err)
			}
			for _, tt := range tests {
				t.Run(tt.name, func(t *testing.T) {
					top, err := s.Top(t.Context(), tt.limit)
					require.NoError(t, err)
					got := make([]string, len(top))
					for i, p := range top {
						got[i] = p.GetXuid()
						require.EqualValues(t, 1, p.GetVersion())
					}
					require.Equal(t, tt.want, got)
				})
			}
			for _, limit := range []int{0, -1} {
				_, err := s.Top(t.Context(), limit)
				require.Error(t, err, "limit %d", limit)
			}
		})
	}
}

func TestConcurrentSaves(t *testing.T) {
	const writers, savesEach = 8, 25
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s := openStore(t, b.path(t))
			ctx := t.Context()

			versions := make(chan int64, writers*savesEach)
			var wg sync.WaitGroup
			for w := range writers {
				wg.Go(func() {
					for i := range savesEach {
						v, err := s.Save(ctx, &networkpb.Player{Xuid: "shared", Coins: int64(w*savesEach + i)})
						if err != nil {
							t.Error(err)
							return
						}
						versions <- v
						if _, _, err := s.Get(ctx, "shared"); err != nil {
							t.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			close(versions)

			seen := make(map[int64]bool)
			for v := range versions {
				require.False(t, seen[v], "version %d returned twice", v)
				seen[v] = true
			}
			require.Len(t, seen, writers*savesEach)
			got, found, err := s.Get(ctx, "shared")
			require.NoError(t, err)
			require.True(t, found)
			require.EqualValues(t, writers*savesEach, got.GetVersion())
		})
	}
}

func TestFileStorePersists(t *testing.T) {
	path := filepath.Join(t.TempDir(), "players.db")
	ctx := t.Context()

	s, err := Open(ctx, path)
	require.NoError(t, err)
	_, err = s.Save(ctx, &networkpb.Player{Xuid: "x", Name: "kept", Coins: 5})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	s = openStore(t, path)
	got, found, err := s.Get(ctx, "x")
	require.NoError(t, err)
	require.True(t, found)
	require.Equal(t, "kept", got.GetName())

	v, err := s.Save(ctx, got)
	require.NoError(t, err)
	require.EqualValues(t, 2, v, "versions continue across reopen")
}

func TestMemoryStoresArePrivate(t *testing.T) {
	a := openStore(t, "")
	b := openStore(t, ":memory:")
	_, err := a.Save(t.Context(), &networkpb.Player{Xuid: "x"})
	require.NoError(t, err)

	_, found, err := b.Get(t.Context(), "x")
	require.NoError(t, err)
	require.False(t, found)
}

func TestClosedStoreFails(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			s, err := Open(t.Context(), b.path(t))
			require.NoError(t, err)
			require.NoError(t, s.Close())

			_, _, err = s.Get(t.Context(), "x")
			require.Error(t, err)
			_, err = s.Save(t.Context(), &networkpb.Player{Xuid: "x"})
			require.Error(t, err)
			_, err = s.Top(t.Context(), 1)
			require.Error(t, err)
		})
	}
}

func TestCanceledContext(t *testing.T) {
	s := openStore(t, "")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, _, err := s.Get(ctx, "x")
	require.ErrorIs(t, err, context.Canceled)
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		path string
	}{
		{name: "question mark", path: filepath.Join(dir, "a?b.db")},
		{name: "missing directory", path: filepath.Join(dir, "missing", "players.db")},
		{name: "directory", path: dir},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(t.Context(), tt.path)
			require.Error(t, err, fmt.Sprint(s))
		})
	}
}
