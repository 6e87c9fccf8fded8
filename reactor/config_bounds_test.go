package reactor_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/keepalive"

	"github.com/trixnew/prpc/reactor"
)

// The connection's timings have bounds of their own, named for what they bound: each is
// accepted at its bound and rejected one nanosecond above it, with an error naming the field
// and the bound.
func TestConfigConnectionTimingBounds(t *testing.T) {
	require.Equal(t, 5*time.Minute, reactor.MaxBackoffDelay)
	require.Equal(t, 5*time.Minute, reactor.MaxMinConnectTimeout)
	require.Equal(t, 5*time.Minute, reactor.MaxKeepaliveTimeout)
	const over = time.Nanosecond
	tests := []struct {
		name  string
		set   func(c *reactor.Config, d time.Duration)
		bound time.Duration
		want  []string // in the error above the bound
	}{
		{"Backoff.BaseDelay", func(c *reactor.Config, d time.Duration) { c.Backoff.BaseDelay = d }, reactor.MaxBackoffDelay,
			[]string{"Config.Backoff.BaseDelay", "MaxBackoffDelay, 5m0s"}},
		{"Backoff.MaxDelay", func(c *reactor.Config, d time.Duration) { c.Backoff.MaxDelay = d }, reactor.MaxBackoffDelay,
			[]string{"Config.Backoff.MaxDelay", "MaxBackoffDelay, 5m0s"}},
		{"Backoff.MinConnectTimeout", func(c *reactor.Config, d time.Duration) { c.Backoff.MinConnectTimeout = d }, reactor.MaxMinConnectTimeout,
			[]string{"Config.Backoff.MinConnectTimeout", "MaxMinConnectTimeout, 5m0s"}},
		{"Keepalive.Timeout", func(c *reactor.Config, d time.Duration) {
			c.Keepalive = keepalive.ClientParameters{Time: time.Minute, Timeout: d}
		}, reactor.MaxKeepaliveTimeout, []string{"Config.Keepalive.Timeout", "MaxKeepaliveTimeout, 5m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure()}
			tt.set(&cfg, tt.bound)
			r, err := reactor.New(cfg)
			require.NoError(t, err, "at the bound")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			require.NoError(t, r.Close(ctx))

			tt.set(&cfg, tt.bound+over)
			r, err = reactor.New(cfg)
			require.Error(t, err, "over the bound")
			require.Nil(t, r)
			for _, w := range tt.want {
				require.ErrorContains(t, err, w)
			}
		})
	}
}
