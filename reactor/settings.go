package reactor

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"

	"github.com/trixnew/prpc/calls"
)

// resolveSettings checks the fields of c other than those resolveConnection checks and
// returns c with their defaults filled in.
func (c Config) resolveSettings() (Config, error) {
	intRange := []struct {
		name       string
		p          *int
		max, deflt int
	}{
		{"Workers", &c.Workers, MaxWorkers, DefaultWorkers},
		{"BatchSize", &c.BatchSize, MaxBatchSize, DefaultBatchSize},
		{"MaxOutstanding", &c.MaxOutstanding, MaxMaxOutstanding, DefaultMaxOutstanding},
	}
	for _, f := range intRange {
		if *f.p < 0 || *f.p > f.max {
			return c, fieldError(f.name, *f.p, fmt.Sprintf("must be between 1 and %d (0 means the default, %d)", f.max, f.deflt))
		}
		if *f.p == 0 {
			*f.p = f.deflt
		}
	}
	if _, err := c.resolveLimit(); err != nil {
		return c, err
	}
	if c.MaxTimeout < 0 || c.MaxTimeout > MaxMaxTimeout {
		return c, fieldError("MaxTimeout", c.MaxTimeout, fmt.Sprintf("must be more than 0 and at most %v (0 means the default, %v)", MaxMaxTimeout, DefaultMaxTimeout))
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.DefaultTimeout < 0 || c.DefaultTimeout > c.MaxTimeout {
		return c, fieldError("DefaultTimeout", c.DefaultTimeout, fmt.Sprintf("must be more than 0 and at most MaxTimeout, %v (0 means the default, %v)", c.MaxTimeout, DefaultTimeout))
	}
	if c.DefaultTimeout == 0 {
		if DefaultTimeout > c.MaxTimeout {
			return c, fieldError("DefaultTimeout", "unset", fmt.Sprintf("its default, %v, is above MaxTimeout, %v; set it", DefaultTimeout, c.MaxTimeout))
		}
		c.DefaultTimeout = DefaultTimeout
	}
	if err := validateKeepalive(&c.Keepalive); err != nil {
		return c, err
	}
	if err := c.Limits.Validate(); err != nil {
		return c, errors.New("prpc: Config." + strings.TrimPrefix(err.Error(), "prpc: "))
	}
	c.Limits = c.Limits.WithDefaults()
	var err error
	if c.Backoff, err = c.Backoff.resolve(); err != nil {
		return c, err
	}
	seen := make(map[string]bool, len(c.Methods))
	for i, m := range c.Methods {
		if isNilDescriptor(m) {
			return c, fieldError(fmt.Sprintf("Methods[%d]", i), "nil", "every method must be non-nil")
		}
		if seen[m.Path()] {
			return c, fieldError(fmt.Sprintf("Methods[%d]", i), m.Path(), "duplicates an earlier method path")
		}
		seen[m.Path()] = true
	}
	switch {
	case c.CriticalReserve < None || c.CriticalReserve >= c.MaxOutstanding:
		return c, fieldError("CriticalReserve", c.CriticalReserve, fmt.Sprintf("must be more than 0 and at most MaxOutstanding − 1, %d (0 means the default; None, -1, means none)", c.MaxOutstanding-1))
	case c.CriticalReserve == None:
		c.CriticalReserve = 0
	case c.CriticalReserve == 0 && c.hasCriticalPolicy():
		c.CriticalReserve = c.MaxOutstanding / 10
	}
	if c.Retry.isSet() && !c.hasRetriedPolicy() {
		if c.hasIdempotentPolicy() {
			return c, errors.New("prpc: Config.Retry applies to idempotent methods that are not hedged, and every Idempotent entry of Policies has Hedge; a method is hedged or retried, never both, and a hedged method's attempts fail over on HedgePolicy.NonFatalCodes (Unavailable when Retry is unset): leave Retry unset, or remove Hedge from the methods to retry")
		}
		return c, errors.New("prpc: Config.Retry applies to idempotent methods, and no Policies entry is Idempotent; mark the methods that may be retried, or leave Retry unset")
	}
	if c.Retry, err = c.Retry.resolve(); err != nil {
		return c, err
	}
	if _, err := c.resolvePolicies(); err != nil {
		return c, err
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Clock == nil {
		c.Clock = SystemClock()
	}
	return c, nil
}

// hasIdempotentPolicy reports whether a policy marks its method idempotent.
func (c *Config) hasIdempotentPolicy() bool {
	for _, p := range c.Policies {
		if p.Idempotent {
			return true
		}
	}
	return false
}

// hasRetriedPolicy reports whether a policy makes gRPC retry its method: idempotent, not hedged.
func (c *Config) hasRetriedPolicy() bool {
	for _, p := range c.Policies {
		if p.Idempotent && p.Hedge == nil {
			return true
		}
	}
	return false
}

// hasCriticalPolicy reports whether a policy marks its method's calls critical.
func (c *Config) hasCriticalPolicy() bool {
	for _, p := range c.Policies {
		if p.Critical {
			return true
		}
	}
	return false
}

// isNilDescriptor reports whether d is nil, or a nil *calls.Method inside the interface.
func isNilDescriptor(d calls.Descriptor) bool {
	return d == nil || reflect.ValueOf(d).IsNil()
}
