package reactor

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"

	"github.com/trixnew/prpc/calls"
)

// resolveSettings checks the fields of c other than those resolveConnection checks and
// returns c with their defaults filled in, or the first error, which names the field at
// fault. The order matters: some bounds depend on fields resolved before them (AdaptiveLimit
// on Workers and BatchSize, DefaultTimeout on MaxTimeout, CriticalReserve on MaxOutstanding).
func (c Config) resolveSettings() (Config, error) {
	if err := c.resolveCapacity(); err != nil {
		return c, err
	}
	if err := c.resolveTimeouts(); err != nil {
		return c, err
	}
	if err := validateKeepalive(&c.Keepalive); err != nil {
		return c, err
	}
	if err := c.resolveCallLimits(); err != nil {
		return c, err
	}
	var err error
	if c.Backoff, err = c.Backoff.resolve(); err != nil {
		return c, err
	}
	if err := c.checkMethods(); err != nil {
		return c, err
	}
	if err := c.resolveCriticalReserve(); err != nil {
		return c, err
	}
	if err := c.resolveRetry(); err != nil {
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

// resolveCapacity checks Workers, BatchSize, MaxOutstanding and MaxStreams and fills in
// their defaults, then checks AdaptiveLimit, which Workers × BatchSize bounds.
func (c *Config) resolveCapacity() error {
	intRange := []struct {
		name       string
		p          *int
		max, deflt int
	}{
		{"Workers", &c.Workers, MaxWorkers, DefaultWorkers},
		{"BatchSize", &c.BatchSize, MaxBatchSize, DefaultBatchSize},
		{"MaxOutstanding", &c.MaxOutstanding, MaxMaxOutstanding, DefaultMaxOutstanding},
		{"MaxStreams", &c.MaxStreams, MaxMaxStreams, DefaultMaxStreams},
	}
	for _, f := range intRange {
		if *f.p < 0 || *f.p > f.max {
			return fieldError(f.name, *f.p, fmt.Sprintf("must be between 1 and %d (0 means the default, %d)", f.max, f.deflt))
		}
		if *f.p == 0 {
			*f.p = f.deflt
		}
	}
	_, err := c.resolveLimit()
	return err
}

// resolveTimeouts checks MaxTimeout, then DefaultTimeout, which MaxTimeout bounds, and fills
// in their defaults.
func (c *Config) resolveTimeouts() error {
	if c.MaxTimeout < 0 || c.MaxTimeout > MaxMaxTimeout {
		return fieldError("MaxTimeout", c.MaxTimeout, fmt.Sprintf("must be more than 0 and at most %v (0 means the default, %v)", MaxMaxTimeout, DefaultMaxTimeout))
	}
	if c.MaxTimeout == 0 {
		c.MaxTimeout = DefaultMaxTimeout
	}
	if c.DefaultTimeout < 0 || c.DefaultTimeout > c.MaxTimeout {
		return fieldError("DefaultTimeout", c.DefaultTimeout, fmt.Sprintf("must be more than 0 and at most MaxTimeout, %v (0 means the default, %v)", c.MaxTimeout, DefaultTimeout))
	}
	if c.DefaultTimeout == 0 {
		if DefaultTimeout > c.MaxTimeout {
			return fieldError("DefaultTimeout", "unset", fmt.Sprintf("its default, %v, is above MaxTimeout, %v; set it", DefaultTimeout, c.MaxTimeout))
		}
		c.DefaultTimeout = DefaultTimeout
	}
	return nil
}

// resolveCallLimits checks Limits, its errors naming the field as one of Config's, and fills
// in its defaults.
func (c *Config) resolveCallLimits() error {
	if err := c.Limits.Validate(); err != nil {
		return errors.New("prpc: Config." + strings.TrimPrefix(err.Error(), "prpc: "))
	}
	c.Limits = c.Limits.WithDefaults()
	return nil
}

// checkMethods checks that the allowlist Methods holds no nil method and no path twice.
func (c *Config) checkMethods() error {
	seen := make(map[string]bool, len(c.Methods))
	for i, m := range c.Methods {
		if isNilDescriptor(m) {
			return fieldError(fmt.Sprintf("Methods[%d]", i), "nil", "every method must be non-nil")
		}
		if seen[m.Path()] {
			return fieldError(fmt.Sprintf("Methods[%d]", i), m.Path(), "duplicates an earlier method path")
		}
		seen[m.Path()] = true
	}
	return nil
}

// resolveCriticalReserve checks CriticalReserve, which MaxOutstanding bounds, and fills in
// its default, which depends on whether a policy is Critical.
func (c *Config) resolveCriticalReserve() error {
	switch {
	case c.CriticalReserve < None || c.CriticalReserve >= c.MaxOutstanding:
		return fieldError("CriticalReserve", c.CriticalReserve, fmt.Sprintf("must be more than 0 and at most MaxOutstanding − 1, %d (0 means the default; None, -1, means none)", c.MaxOutstanding-1))
	case c.CriticalReserve == None:
		c.CriticalReserve = 0
	case c.CriticalReserve == 0 && c.hasCriticalPolicy():
		c.CriticalReserve = c.MaxOutstanding / 10
	}
	return nil
}

// resolveRetry checks that Retry, if set, applies to a method of Policies (an idempotent one
// that is not hedged), then checks its fields and fills in their defaults.
func (c *Config) resolveRetry() error {
	if c.Retry.isSet() && !c.hasRetriedPolicy() {
		if c.hasIdempotentPolicy() {
			return errors.New("prpc: Config.Retry applies to idempotent methods that are not hedged, and every Idempotent entry of Policies has Hedge; a method is hedged or retried, never both, and a hedged method's attempts fail over on HedgePolicy.NonFatalCodes (Unavailable when Retry is unset): leave Retry unset, or remove Hedge from the methods to retry")
		}
		return errors.New("prpc: Config.Retry applies to idempotent methods, and no Policies entry is Idempotent; mark the methods that may be retried, or leave Retry unset")
	}
	var err error
	c.Retry, err = c.Retry.resolve()
	return err
}

// hasIdempotentPolicy reports whether a policy marks its method idempotent.
func (c *Config) hasIdempotentPolicy() bool {
	return slices.ContainsFunc(c.Policies, func(p MethodPolicy) bool { return p.Idempotent })
}

// hasRetriedPolicy reports whether a policy makes gRPC retry its method: idempotent, not hedged.
func (c *Config) hasRetriedPolicy() bool {
	return slices.ContainsFunc(c.Policies, func(p MethodPolicy) bool { return p.Idempotent && p.Hedge == nil })
}

// hasCriticalPolicy reports whether a policy marks its method's calls critical.
func (c *Config) hasCriticalPolicy() bool {
	return slices.ContainsFunc(c.Policies, func(p MethodPolicy) bool { return p.Critical })
}

// isNilDescriptor reports whether d is nil, or a nil *calls.Method inside the interface.
func isNilDescriptor(d calls.Descriptor) bool {
	return d == nil || reflect.ValueOf(d).IsNil()
}
