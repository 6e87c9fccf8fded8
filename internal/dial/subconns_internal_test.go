package dial

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/balancer"
)

// fakeSubConn stands for gRPC's subchannel; only its identity matters.
type fakeSubConn struct{ balancer.SubConn }

// fixedPicker picks one subchannel for every call.
type fixedPicker struct{ sc balancer.SubConn }

func (p fixedPicker) Pick(balancer.PickInfo) (balancer.PickResult, error) {
	return balancer.PickResult{SubConn: p.sc}, nil
}

// TestUnwrappingPickerContexts checks that prpc's picker gives gRPC back its own subchannel
// whether or not the call's context has the slot for the picked backend: prpc's calls have
// one, which gets the backend's address; calls made through Reactor.Conn (streams, grpc-go's
// stubs) have none, and are picked all the same.
func TestUnwrappingPickerContexts(t *testing.T) {
	inner := &fakeSubConn{}
	wrapped := &observedSubConn{SubConn: inner, addr: "127.0.0.1:1"}
	p := unwrappingPicker{fixedPicker{sc: wrapped}}

	pr, err := p.Pick(balancer.PickInfo{FullMethodName: "/grpc.health.v1.Health/Watch", Ctx: context.Background()})
	require.NoError(t, err)
	require.Same(t, inner, pr.SubConn, "a context without the slot")

	var picked Pick
	ctx := context.WithValue(context.Background(), PickedKey{}, &picked)
	pr, err = p.Pick(balancer.PickInfo{FullMethodName: "/prpctest.TestService/Echo", Ctx: ctx})
	require.NoError(t, err)
	require.Same(t, inner, pr.SubConn)
	require.Equal(t, "127.0.0.1:1", picked.Addr, "a prpc call's context")
}

// TestBalancingConfigParses checks that the balancing config a table writes into a service
// config names an observing balancer that gRPC knows, and that its parser reads the table's id
// back: the writer and the parser of that config must agree.
func TestBalancingConfigParses(t *testing.T) {
	table := NewSubconnTable()
	defer table.Release()
	for name, want := range map[string]string{"round_robin": observedRoundRobin, "": observedPickFirst, "pick_first": observedPickFirst} {
		entry := table.BalancingConfig(name)
		require.Len(t, entry, 1, name)
		js, err := json.Marshal(entry[want])
		require.NoError(t, err, name)
		b := balancer.Get(want)
		require.NotNil(t, b, name)
		cfg, err := b.(balancer.ConfigParser).ParseConfig(js)
		require.NoError(t, err, name)
		require.Equal(t, table.id, cfg.(*observedConfig).Table, name)
	}
}
