// Package donectx holds the done half of a context.Context that ends with an error of its
// owner's choosing, such as context.DeadlineExceeded without a timer of its own. Package
// context's own contexts end with Canceled unless their timer fires; a context that a
// deadline heap or a manual clock ends must report DeadlineExceeded, and so implements Done
// and Err itself. Embedding a State gives a context type Done, Err and AfterFunc: through
// AfterFunc, package context attaches the contexts derived from it without a goroutine, and
// they end with its error.
package donectx

import "sync"

// State is the done half of a context. Its zero value is not ready: use Init.
type State struct {
	done chan struct{}

	mu    sync.Mutex
	err   error
	after []func() // run once done; a stopped one is nil
}

// Init makes s ready: not done.
func (s *State) Init() { s.done = make(chan struct{}) }

// Done returns a channel closed when s ends.
func (s *State) Done() <-chan struct{} { return s.done }

// Err returns nil until s ends, then the error it ended with.
func (s *State) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// AfterFunc arranges for f to run once s ends, as context.AfterFunc does: package context calls
// it for every context derived from one that embeds s. f runs on the goroutine that ends s,
// or on a goroutine of its own if s has ended already (package context calls AfterFunc with a
// mutex held that f takes). stop reports whether it stopped f from running.
func (s *State) AfterFunc(f func()) (stop func() bool) {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		go f()
		return func() bool { return false }
	}
	i := len(s.after)
	s.after = append(s.after, f)
	s.mu.Unlock()
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err != nil || s.after[i] == nil {
			return false
		}
		s.after[i] = nil
		return true
	}
}

// End ends s with err, which must not be nil, unless it has ended already, and runs the
// functions of AfterFunc on the calling goroutine, without s's lock (they call Err). It
// reports whether it ended s.
func (s *State) End(err error) bool {
	s.mu.Lock()
	if s.err != nil {
		s.mu.Unlock()
		return false
	}
	s.err = err
	close(s.done)
	after := s.after
	s.after = nil
	s.mu.Unlock()
	for _, f := range after {
		if f != nil {
			f()
		}
	}
	return true
}
