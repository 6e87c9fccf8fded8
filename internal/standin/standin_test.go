package standin_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc"

	"github.com/trixnew/prpc/internal/standin"
)

// plain is a connection that is no stand-in.
type plain struct{}

func (plain) Invoke(context.Context, string, any, any, ...grpc.CallOption) error { return nil }
func (plain) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, nil
}

// tagged embeds a Mark, as reactortest's Backend does.
type tagged struct {
	plain
	standin.Mark
}

func TestMark(t *testing.T) {
	var got standin.Retry
	view := &plain{}
	in := &tagged{Mark: standin.NewMark(func(r standin.Retry) grpc.ClientConnInterface { got = r; return view })}
	retry := standin.Retry{Idempotent: map[string]bool{"/s.S/M": true}, MaxAttempts: 3}

	require.True(t, standin.Is(in))
	require.Same(t, view, standin.For(in, retry))
	require.Equal(t, retry, got, "the connection gets the reactor's Retry")

	for name, c := range map[string]grpc.ClientConnInterface{"nil": nil, "plain": plain{}, "zero Mark": &tagged{}} {
		require.False(t, standin.Is(c), name)
		require.Equal(t, c, standin.For(c, retry), "%s: the connection itself", name)
	}
}
