package callqueue

// LimitConfig configures the adaptive in-flight limit of a ReadyQueue: an AIMD limit, as
// Netflix's concurrency-limits library calls it, on the calls that lanes run at once.
type LimitConfig struct {
	// Floor and Max bound the limit: 1 ≤ Floor ≤ Max.
	Floor, Max int
	// Initial is the limit to start from, from Floor to Max.
	Initial int
	// Backoff multiplies the limit on a drop, in (0, 1).
	Backoff float64
}

// Signal is what a lane learnt about the backend from the call it ran, for the limit.
type Signal uint8

// Signals of a finished call.
const (
	// Neutral says nothing about the backend: a call skipped because it was settled while
	// it waited, cancelled, cut off by Close, or never encoded.
	Neutral Signal = iota
	// Success is a call the backend answered: if the calls in flight, this one included,
	// filled at least half the limit, it counts toward the next step up (see aimd.release).
	Success
	// Drop is a call that failed with DeadlineExceeded, ResourceExhausted or Unavailable, or
	// that the reactor cut at its deadline: the limit shrinks by the backoff ratio, once per
	// window (see aimd.release).
	Drop
)

// Slot is a lane's place under the limit, from one take to the next: the lane sets Signal once
// its call has finished, and its next take releases the place with it, under the same lock.
// Its zero value holds no place. Without a limit, the queue ignores it.
type Slot struct {
	seq    uint64 // the place's number (aimd.taken when it was taken); 0 for none
	Signal Signal
}

// Held reports whether s holds a place under the limit.
func (s *Slot) Held() bool { return s.seq != 0 }

// aimd is the limit's state, guarded by the ready queue's mutex.
type aimd struct {
	cfg     LimitConfig
	limit   int
	running int    // places held by lanes
	taken   uint64 // places handed out so far: the number of the last
	// recovery is the number of the last place handed out when the limit last shrank: the
	// drops of calls that were in flight then (numbers up to it) are not counted again. So
	// the limit shrinks once per window of calls in flight, as TCP's NewReno shrinks its
	// window once per round trip, and one burst of drops from a backend that was already
	// overloaded does not collapse it to the floor.
	recovery uint64
	// credit counts the successes since the limit last grew: it grows by one once they
	// reach it, one window of calls, as TCP's congestion window grows by one segment per
	// round trip. Growing by one per success, as Netflix's AIMDLimit does, outgrew the
	// shrinking once per window against an overloaded backend (the overload scenario of the
	// benchmarks' policies suite, as it was first written) and kept the limit at its max.
	credit int
	// grown is set when the limit grows, until the next take wakes the lanes the new place
	// may serve (ReadyQueue.take).
	grown bool
}

// open reports whether a lane may take a place.
func (a *aimd) open() bool {
	if mutation == "limit-ignored" {
		return true
	}
	return a.running < a.limit
}

// free returns how many lanes may take a place now.
func (a *aimd) free() int { return max(a.limit-a.running, 0) }

// take hands a place to s.
func (a *aimd) take(s *Slot) {
	a.running++
	a.taken++
	s.seq, s.Signal = a.taken, Neutral
}

// release takes s's place back and moves the limit by its signal. On a drop the limit is
// multiplied by the backoff ratio, at least to the floor, unless the call was in flight when
// it last shrank; a success, if the calls in flight when it returned, itself included, were
// at least half the limit, earns a credit, and the limit grows by one, at most to the max,
// once the credits reach it.
func (a *aimd) release(s *Slot) {
	if s.seq == 0 {
		return
	}
	inFlight := a.running
	a.running--
	switch s.Signal {
	case Drop:
		if s.seq > a.recovery {
			a.limit = max(a.cfg.Floor, int(float64(a.limit)*a.cfg.Backoff))
			a.recovery, a.credit = a.taken, 0
		}
	case Success:
		if 2*inFlight >= a.limit {
			a.credit++
			if a.credit >= a.limit {
				a.credit = 0
				a.limit = min(a.cfg.Max, a.limit+1)
				a.grown = true
			}
		}
	}
	*s = Slot{}
}
