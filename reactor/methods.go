package reactor

import (
	"sync/atomic"

	"github.com/trixnew/prpc/internal/callcore"
)

// methodEntry is what the reactor keeps per method path: its policy, resolved by New, and its
// counters, which mu guards. Entries are made on a method's first call, submitted or
// rejected, and kept for the reactor's life; Stats reports one MethodStats per entry.
type methodEntry struct {
	path     string
	policy   methodPolicy
	counters *methodCounters
	hedge    *hedgeState // the method's hedging; nil if it is not hedged
	// floor is what the method's recent successful calls say its calls need (shed.go).
	floor transportFloor
}

// methodCache remembers the entry of the method last called, so that a burst of calls of one
// method finds its policy and counters without hashing the path. Comparing the paths costs
// little when they share their bytes, as the calls of one descriptor do.
type methodCache struct {
	last atomic.Pointer[methodEntry]
}

// method returns the entry of the method ops names. Safe from any goroutine; on a miss it
// takes mu.
func (r *Reactor) method(ops *callcore.Ops) *methodEntry {
	if e := r.methods.last.Load(); e != nil && e.path == ops.Path {
		return e
	}
	r.mu.Lock()
	e := r.methodLocked(ops.Path)
	r.mu.Unlock()
	r.methods.last.Store(e)
	return e
}

// methodLocked returns the entry of the method at path, making it if need be; mu held.
func (r *Reactor) methodLocked(path string) *methodEntry {
	e := r.byPath[path]
	if e == nil {
		policy, ok := r.policies[path]
		if !ok {
			policy = methodPolicy{timeout: r.cfg.DefaultTimeout}
		}
		e = &methodEntry{path: path, policy: policy, counters: newMethodCounters()}
		if policy.hedge != nil {
			e.hedge = &hedgeState{hedgePolicy: *policy.hedge, counters: e.counters, tokens: hedgeBudgetTokens}
		}
		if r.byPath == nil {
			r.byPath = make(map[string]*methodEntry)
		}
		r.byPath[path] = e
	}
	return e
}
