package reactor_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/reactor"
)

// Every field whose zero value means a default other than none takes None for explicitly
// none, and only None of the negative values: the zero value, None, a valid value and invalid
// ones for each.
func TestConfigNone(t *testing.T) {
	critical := []reactor.MethodPolicy{{Method: echo, Critical: true}}
	base := func() reactor.Config {
		return reactor.Config{Target: "127.0.0.1:1", Credentials: reactor.Insecure(), MaxOutstanding: 100}
	}
	type result struct {
		reserve int
		jitter  float64
	}
	tests := []struct {
		name string
		set  func(c *reactor.Config)
		want result   // with the defaults of the other field
		errs []string // in the error, if rejected
	}{
		{"CriticalReserve zero, no critical policy", func(c *reactor.Config) {}, result{0, 0.2}, nil},
		{"CriticalReserve zero, a critical policy", func(c *reactor.Config) { c.Policies = critical }, result{10, 0.2}, nil},
		{"CriticalReserve None", func(c *reactor.Config) { c.Policies, c.CriticalReserve = critical, reactor.None }, result{0, 0.2}, nil},
		{"CriticalReserve set", func(c *reactor.Config) { c.Policies, c.CriticalReserve = critical, 99 }, result{99, 0.2}, nil},
		{"CriticalReserve -2", func(c *reactor.Config) { c.CriticalReserve = -2 }, result{},
			[]string{"Config.CriticalReserve is -2", "None, -1, means none"}},
		{"CriticalReserve MaxOutstanding", func(c *reactor.Config) { c.CriticalReserve = 100 }, result{},
			[]string{"Config.CriticalReserve is 100", "at most MaxOutstanding − 1, 99"}},

		{"Jitter zero", func(c *reactor.Config) {}, result{0, 0.2}, nil},
		{"Jitter None", func(c *reactor.Config) { c.Backoff.Jitter = reactor.None }, result{0, 0}, nil},
		{"Jitter set", func(c *reactor.Config) { c.Backoff.Jitter = 1 }, result{0, 1}, nil},
		{"Jitter small", func(c *reactor.Config) { c.Backoff.Jitter = 1e-9 }, result{0, 1e-9}, nil},
		{"Jitter -0.5", func(c *reactor.Config) { c.Backoff.Jitter = -0.5 }, result{},
			[]string{"Config.Backoff.Jitter is -0.5", "None, -1, means no jitter"}},
		{"Jitter -2", func(c *reactor.Config) { c.Backoff.Jitter = -2 }, result{},
			[]string{"Config.Backoff.Jitter is -2", "None, -1, means no jitter"}},
		{"Jitter over 1", func(c *reactor.Config) { c.Backoff.Jitter = 1.01 }, result{},
			[]string{"Config.Backoff.Jitter is 1.01", "at most 1"}},
		{"Jitter NaN", func(c *reactor.Config) { c.Backoff.Jitter = math.NaN() }, result{},
			[]string{"Config.Backoff.Jitter is NaN"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base()
			tt.set(&cfg)
			got, err := reactor.Resolve(cfg)
			if tt.errs != nil {
				require.Error(t, err)
				for _, w := range tt.errs {
					require.ErrorContains(t, err, w)
				}
				r, err := reactor.New(cfg)
				require.Error(t, err, "New rejects it too")
				require.Nil(t, r)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, result{got.CriticalReserve, got.Backoff.Jitter})
		})
	}
}
