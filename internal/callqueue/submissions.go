package callqueue

import (
	"sync/atomic"

	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/callcore"
)

// Submission is what Call or Go hands the reactor goroutine for one admitted call: all the
// reactor needs to give it a record, and no more, so that a burst writes as little as it can
// on the submitting goroutine.
type Submission struct {
	seq       atomic.Uint64 // the ring position the slot is ready for (see SubmissionRing)
	Target    callcore.Target
	Ops       *callcore.Ops
	Req       proto.Message
	Submitted int64
	Deadline  int64
	Extra     *callcore.Extra
	Flags     SubmitFlags
}

// SubmitFlags are a submission's booleans.
type SubmitFlags uint8

const (
	SubmitWaitForReady SubmitFlags = 1 << iota // grpc.WaitForReady(true)
	SubmitMetadata                             // ask for the response header and trailer
	SubmitCritical                             // critical: a lane takes it before the others
)

// SubmissionRing is the queue of admitted calls from the goroutines that call Call or Go to
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
type SubmissionRing struct {
	// Set at creation, then only read.
	slots []Submission
	mask  uint64
	wake  chan struct{}
	_     CacheLinePad

	head atomic.Uint64 // the next position a producer takes
	_    CacheLinePad

	tail uint64 // the next position the consumer takes; the consumer's alone
	_    CacheLinePad

	// Written by the consumer as it sleeps and wakes, and once as it exits; read by every
	// producer as it publishes.
	sleeping atomic.Bool // the consumer may block on wake
	gone     atomic.Bool // the consumer has exited
}

// NewSubmissionRing returns a ring of at least n slots that wakes the consumer on wake.
func NewSubmissionRing(n int, wake chan struct{}) *SubmissionRing {
	size := 1
	for size < n {
		size *= 2
	}
	q := &SubmissionRing{slots: make([]Submission, size), mask: uint64(size - 1), wake: wake}
	for i := range q.slots {
		q.slots[i].seq.Store(uint64(i))
	}
	return q
}

// seqDead is the seq of a slot taken after the consumer exited: it matches no position.
const seqDead = ^uint64(0)

// Size returns the number of slots: MaxOutstanding rounded up to a power of two.
func (q *SubmissionRing) Size() int { return len(q.slots) }

// Index returns the slot index of position pos, in [0, Size()).
func (q *SubmissionRing) Index(pos uint64) int { return int(pos & q.mask) }

// BeginSleep tells producers that the consumer may block on the wake channel, then reports
// whether it may: false if a submission was published meanwhile. The consumer calls EndSleep
// once it is awake, whatever BeginSleep returned. Consumer only.
func (q *SubmissionRing) BeginSleep() bool {
	q.sleeping.Store(true)
	return !q.Ready()
}

// EndSleep tells producers that the consumer is awake: they need not wake it. Consumer only.
func (q *SubmissionRing) EndSleep() { q.sleeping.Store(false) }

// Reserve returns a free slot and its position, for the caller to fill and then publish, or
// false if the consumer is gone. Safe from any goroutine; it never blocks.
func (q *SubmissionRing) Reserve() (*Submission, uint64, bool) {
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

// Publish hands the filled slot s, reserved at pos, to the consumer, waking it if it sleeps,
// and reports true; or, if the consumer is gone and did not take it, frees the slot and
// reports false: the caller then settles the call itself, from what it submitted.
func (q *SubmissionRing) Publish(s *Submission, pos uint64) bool {
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

// Take copies out the next published submission, frees its slot and returns its position and
// true, or reports false if none is published yet. Consumer only, while not gone.
func (q *SubmissionRing) Take(out *Submission) (uint64, bool) {
	pos := q.tail
	s := &q.slots[pos&q.mask]
	if s.seq.Load() != pos+1 {
		return 0, false
	}
	CopySubmission(out, s)
	ClearSubmission(s)
	s.seq.Store(pos + q.mask + 1)
	q.tail++
	return pos, true
}

// Ready reports whether a submission is published at the consumer's position. Consumer only.
func (q *SubmissionRing) Ready() bool {
	return q.slots[q.tail&q.mask].seq.Load() == q.tail+1
}

// Close marks the consumer gone and takes every submission published so far, in any slot,
// calling f with each and its position; producers take back what they publish later. The
// slots keep their references, for the reactor's remaining life. Consumer only, once.
func (q *SubmissionRing) Close(f func(uint64, *Submission)) {
	q.gone.Store(true)
	head := q.head.Load()
	var out Submission
	for pos := q.tail; pos < head; pos++ {
		s := &q.slots[pos&q.mask]
		if s.seq.Load() != pos+1 {
			continue // not published yet: its producer takes it back
		}
		CopySubmission(&out, s) // before the compare-and-swap, while the slot is surely ours to read
		if s.seq.CompareAndSwap(pos+1, seqDead) {
			f(pos, &out)
		}
	}
	q.tail = head
}

// CopySubmission copies every field of src but seq to dst.
func CopySubmission(dst, src *Submission) {
	dst.Target, dst.Ops, dst.Req = src.Target, src.Ops, src.Req
	dst.Submitted, dst.Deadline, dst.Extra, dst.Flags = src.Submitted, src.Deadline, src.Extra, src.Flags
}

// ClearSubmission drops a taken slot's references, so that it keeps nothing alive.
func ClearSubmission(s *Submission) {
	s.Target, s.Ops, s.Req, s.Extra = nil, nil, nil, nil
}
