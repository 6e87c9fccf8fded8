package memconn_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/trixnew/prpc/internal/memconn"
)

// plain is a connection that does not run calls in memory.
type plain struct{}

func (plain) Invoke(context.Context, string, any, any, ...grpc.CallOption) error { return nil }
func (plain) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, nil
}

// tagged embeds a Tag, as reactortest's Backend does.
type tagged struct {
	plain
	memconn.Tag
}

func TestTag(t *testing.T) {
	var got memconn.Retry
	view := &plain{}
	in := &tagged{Tag: memconn.NewTag(func(r memconn.Retry) grpc.ClientConnInterface { got = r; return view })}
	retry := memconn.Retry{Idempotent: map[string]bool{"/s.S/M": true}, MaxAttempts: 3}

	require.True(t, memconn.Is(in))
	require.Same(t, view, memconn.Reactor(in, retry))
	require.Equal(t, retry, got, "the connection gets the reactor's Retry")

	for name, c := range map[string]grpc.ClientConnInterface{"nil": nil, "plain": plain{}, "zero Tag": &tagged{}} {
		require.False(t, memconn.Is(c), name)
		require.Equal(t, c, memconn.Reactor(c, retry), "%s: the connection itself", name)
	}
}
