// Package donectx holds the done half of a context.Context that ends with an error of its
// owner's choosing, such as context.DeadlineExceeded without a timer of its own. Package
// context's own contexts end with Canceled unless their timer fires; a context that a
// deadline heap or a manual clock ends must report DeadlineExceeded, and so implements Done
// and Err itself. Embedding a State gives a context type Done, Err and AfterFunc: through
// AfterFunc, package context attaches the contexts derived from it without a goroutine, and
// they end with its error.
package donectx

import (
	"sync"
	"sync/atomic"
)

// State is the done half of a context. Its zero value is ready: not done. It allocates its
// Done channel only when Done is first called, and nothing for the first function
// registered with AfterFunc, as package context's own contexts.
type State struct {
	done atomic.Pointer[chan struct{}] // made by the first Done, or closedChan by End

	mu        sync.Mutex
	err       error
	first     func() // the first function of AfterFunc, until stopped or run
	firstUsed bool   // first has been given out: later functions go to more
	// more holds the others (a stopped one is nil): rarely any, so a pointer, which keeps
	// State, embedded in every transport call's context, 16 bytes smaller than a slice.
	more *[]func()
}

// closedChan is the Done channel of a State that ended before anyone asked for it.
var closedChan = func() *chan struct{} {
	c := make(chan struct{})
	close(c)
	return &c
}()

// Done returns a channel closed when s ends.
func (s *State) Done() <-chan struct{} {
	if d := s.done.Load(); d != nil {
		return *d
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if d := s.done.Load(); d != nil {
		return *d
	}
	d := make(chan struct{})
	s.done.Store(&d)
	return d
}

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
	defer s.mu.Unlock()
	if s.err != nil {
		go f()
		return func() bool { return false }
	}
	i := -1 // the first slot
	if s.firstUsed {
		if s.more == nil {
			s.more = new([]func())
		}
		*s.more = append(*s.more, f)
		i = len(*s.more) - 1
	} else {
		s.first, s.firstUsed = f, true
	}
	return func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.err != nil {
			return false // it ran
		}
		slot := &s.first
		if i >= 0 {
			slot = &(*s.more)[i]
		}
		if *slot == nil {
			return false // stopped already
		}
		*slot = nil
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
	if d := s.done.Load(); d != nil {
		close(*d)
	} else {
		s.done.Store(closedChan)
	}
	first, more := s.first, s.more
	s.first, s.more = nil, nil
	s.mu.Unlock()
	if first != nil {
		first()
	}
	if more != nil {
		for _, f := range *more {
			if f != nil {
				f()
			}
		}
	}
	return true
}
