package reactor

import (
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
)

// submission is what Call or Go hands the reactor goroutine for one admitted call: all the
// reactor needs to give it a record, and no more, so that a burst writes as little as it can
// on the submitting goroutine.
type submission struct {
	seq       atomic.Uint64 // the ring position the slot is ready for (see submissionRing)
	target    callcore.Target
	ops       *callcore.Ops
	req       proto.Message
	submitted int64
	deadline  int64
	extra     *callcore.Extra
	flags     submitFlags
}

// submitFlags are a submission's booleans.
type submitFlags uint8

const (
	submitWaitForReady submitFlags = 1 << iota // grpc.WaitForReady(true)
	submitMetadata                             // ask for the response header and trailer
	submitCritical                             // critical: a lane takes it before the others
)

// submissionRing is the queue of admitted calls from the goroutines that call Call or Go to
// the reactor goroutine: a bounded ring of slots with a sequence number each (Vyukov's bounded
// queue), lock-free for its producers, with one consumer. It holds as many slots as
// MaxOutstanding allows calls, rounded up to a power of two, so it is never full: a slot
// holds an admitted call until the reactor goroutine takes it, and admission bounds the
// admitted calls. Its slots are written once at New, so that a burst writes memory already
// mapped, in order.
//
// A slot at position pos is free for a producer while its seq is pos; the producer that wins
// the position (a compare-and-swap of head) fills the slot and publishes it by setting seq to
// pos+1; the consumer takes it and frees it for the position a lap later, pos+len(slots).
//
// The consumer sleeps only after saying so (sleeping) and checking the ring once more; a
// producer that publishes a slot wakes it if it says it sleeps. When the reactor goroutine
// exits it marks the ring gone and takes what is published; a producer that publishes after
// that takes its slot back itself. Both take a slot with a compare-and-swap of its seq to
// seqDead, so exactly one of them does, and a slot taken so is never reused: no producer
// reserves a slot once the ring is gone.
type submissionRing struct {
	// Set at creation, then only read.
	slots []submission
	mask  uint64
	wake  chan struct{}
	_     cacheLinePad

	head atomic.Uint64 // the next position a producer takes
	_    cacheLinePad

	tail uint64 // the next position the consumer takes; the consumer's alone
	_    cacheLinePad

	// Written by the consumer as it sleeps and wakes, and once as it exits; read by every
	// producer as it publishes.
	sleeping atomic.Bool // the consumer may block on wake
	gone     atomic.Bool // the consumer has exited
}

// newSubmissionRing returns a ring of at least n slots that wakes the consumer on wake.
func newSubmissionRing(n int, wake chan struct{}) *submissionRing {
	size := 1
	for size < n {
		size *= 2
	}
	q := &submissionRing{slots: make([]submission, size), mask: uint64(size - 1), wake: wake}
	for i := range q.slots {
		q.slots[i].seq.Store(uint64(i))
	}
	return q
}

// seqDead is the seq of a slot taken after the consumer exited: it matches no position.
const seqDead = ^uint64(0)

// reserve returns a free slot and its position, for the caller to fill and then publish, or
// false if the consumer is gone. Safe from any goroutine; it never blocks.
func (q *submissionRing) reserve() (*submission, uint64, bool) {
	for {
		if q.gone.Load() {
			return nil, 0, false
		}
		pos := q.head.Load()
		s := &q.slots[pos&q.mask]
		switch seq := s.seq.Load(); {
		case seq == pos:
			if q.head.CompareAndSwap(pos, pos+1) {
				return s, pos, true
			}
		case seq < pos:
			// The slot a lap behind is not taken yet: more calls admitted than the ring
			// holds, which admission rules out.
			panic("prpc: internal error: the submission ring is full")
		}
		// Another producer took pos: try the next position.
	}
}

// publish hands the filled slot s, reserved at pos, to the consumer, waking it if it sleeps,
// and reports true; or, if the consumer is gone and did not take it, frees the slot and
// reports false: the caller then settles the call itself, from what it submitted.
func (q *submissionRing) publish(s *submission, pos uint64) bool {
	s.seq.Store(pos + 1)
	if q.gone.Load() {
		if s.seq.CompareAndSwap(pos+1, seqDead) {
			return false
		}
		return true // the consumer took it on its way out
	}
	if q.sleeping.Load() && q.sleeping.CompareAndSwap(true, false) {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
	return true
}

// take copies out the next published submission, frees its slot and returns its position and
// true, or reports false if none is published yet. Consumer only, while not gone.
func (q *submissionRing) take(out *submission) (uint64, bool) {
	pos := q.tail
	s := &q.slots[pos&q.mask]
	if s.seq.Load() != pos+1 {
		return 0, false
	}
	copySubmission(out, s)
	clearSubmission(s)
	s.seq.Store(pos + q.mask + 1)
	q.tail++
	return pos, true
}

// ready reports whether a submission is published at the consumer's position. Consumer only.
func (q *submissionRing) ready() bool {
	return q.slots[q.tail&q.mask].seq.Load() == q.tail+1
}

// close marks the consumer gone and takes every submission published so far, in any slot,
// calling f with each and its position; producers take back what they publish later. The
// slots keep their references, for the reactor's remaining life. Consumer only, once.
func (q *submissionRing) close(f func(uint64, *submission)) {
	q.gone.Store(true)
	head := q.head.Load()
	var out submission
	for pos := q.tail; pos < head; pos++ {
		s := &q.slots[pos&q.mask]
		if s.seq.Load() != pos+1 {
			continue // not published yet: its producer takes it back
		}
		copySubmission(&out, s) // before the compare-and-swap, while the slot is surely ours to read
		if s.seq.CompareAndSwap(pos+1, seqDead) {
			f(pos, &out)
		}
	}
	q.tail = head
}

// copySubmission copies every field of src but seq to dst.
func copySubmission(dst, src *submission) {
	dst.target, dst.ops, dst.req = src.target, src.ops, src.req
	dst.submitted, dst.deadline, dst.extra, dst.flags = src.submitted, src.deadline, src.extra, src.flags
}

// clearSubmission drops a taken slot's references, so that it keeps nothing alive.
func clearSubmission(s *submission) {
	s.target, s.ops, s.req, s.extra = nil, nil, nil, nil
}
