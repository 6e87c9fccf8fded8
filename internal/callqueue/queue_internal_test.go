package callqueue

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/trixnew/prpc/internal/callcore"
)

// woken reports whether a wake-up waits on the inbox's channel, and takes it.
func woken(q *Inbox) bool {
	select {
	case <-q.Wake():
		return true
	default:
		return false
	}
}

// TestInboxWakeUps checks the inbox step by step: a push or a completion into an empty inbox
// leaves one wake-up for the consumer, one into an inbox not yet taken leaves none (the
// consumer is already due to take it), and Take hands over everything queued, events and
// completions apart, each in the order they came.
func TestInboxWakeUps(t *testing.T) {
	rec := new(callcore.Call)
	steps := []struct {
		do      string // push, complete, take or signal
		wake    bool   // a wake-up waits once the step is done (each step's is taken)
		pending int    // Pending once the step is done
	}{
		{"push", true, 1},
		{"push", false, 2},
		{"complete", false, 3},
		{"take", false, 0},
		{"complete", true, 1},
		{"push", false, 2},
		{"complete", false, 3},
		{"take", false, 0},
		{"take", false, 0}, // nothing queued: nothing taken
		{"signal", true, 0},
		{"push", true, 1}, // a spurious wake-up, taken, does not hide the next
		{"take", false, 0},
	}
	q := NewInbox()
	require.Zero(t, q.Pending())
	require.False(t, woken(q), "a new inbox signals nothing")
	var wantEvents, events []Event
	var wantDone, done []Completion
	for i, s := range steps {
		switch s.do {
		case "push":
			e := Event{Kind: EvCancel, C: rec, Gen: uint32(i)}
			require.True(t, q.Push(e))
			wantEvents = append(wantEvents, e)
		case "complete":
			c := Completion{C: rec, Inv: int32(i)}
			q.Complete(c)
			wantDone = append(wantDone, c)
		case "take":
			events, done = q.Take(events, done)
			require.Truef(t, slices.Equal(wantEvents, events), "step %d: took events %v, want %v", i, events, wantEvents)
			require.Truef(t, slices.Equal(wantDone, done), "step %d: took completions %v, want %v", i, done, wantDone)
			wantEvents, wantDone = nil, nil
		case "signal":
			q.Signal()
			q.Signal() // a second signal before the consumer wakes adds nothing, and never blocks
		}
		require.Equalf(t, s.wake, woken(q), "step %d (%s): a wake-up", i, s.do)
		require.Equalf(t, s.pending, q.Pending(), "step %d (%s): pending", i, s.do)
	}
}

// TestInboxTakeReusesBuffers checks that Take gives the buffers it is handed to the queue,
// emptied so that they keep no record alive, and that the queue appends into them.
func TestInboxTakeReusesBuffers(t *testing.T) {
	q := NewInbox()
	rec := new(callcore.Call)
	q.Push(Event{Kind: EvCancel, C: rec})
	q.Complete(Completion{C: rec})
	events, done := q.Take(nil, nil)
	require.Len(t, events, 1)
	require.Len(t, done, 1)
	firstEvents, firstDone := events, done

	q.Push(Event{Kind: EvCancel, C: rec, Gen: 1})
	q.Complete(Completion{C: rec, Inv: 1})
	events, done = q.Take(events, done) // the first batch, handled, goes back
	require.Equal(t, []Event{{Kind: EvCancel, C: rec, Gen: 1}}, events)
	require.Equal(t, []Completion{{C: rec, Inv: 1}}, done)
	require.Equal(t, Event{}, firstEvents[0], "a handed-back event buffer still holds its event")
	require.Equal(t, Completion{}, firstDone[0], "a handed-back completion buffer still holds its completion")

	q.Push(Event{Kind: EvCancel, C: rec, Gen: 2})
	q.Complete(Completion{C: rec, Inv: 2})
	events, done = q.Take(events, done)
	require.Same(t, &firstEvents[0], &events[0], "the queue did not reuse the event buffer handed back")
	require.Same(t, &firstDone[0], &done[0], "the queue did not reuse the completion buffer handed back")
	require.Equal(t, uint32(2), events[0].Gen)
	require.Equal(t, int32(2), done[0].Inv)
}

// TestInboxClose checks that Close returns what is still queued, and that the inbox then
// refuses events, drops completions and signals neither.
func TestInboxClose(t *testing.T) {
	q := NewInbox()
	rec := new(callcore.Call)
	require.True(t, q.Push(Event{Kind: EvCancel, C: rec}))
	q.Complete(Completion{C: rec, Inv: 1})
	require.True(t, woken(q))

	events, done := q.Close()
	require.Equal(t, []Event{{Kind: EvCancel, C: rec}}, events)
	require.Equal(t, []Completion{{C: rec, Inv: 1}}, done)
	require.Zero(t, q.Pending())

	require.False(t, q.Push(Event{Kind: EvClose}), "an event accepted after close")
	q.Complete(Completion{C: rec, Inv: 2})
	require.Zero(t, q.Pending(), "a completion queued after close")
	require.False(t, woken(q), "a wake-up for what a closed inbox refused")
	events, done = q.Take(nil, nil)
	require.Empty(t, events)
	require.Empty(t, done)
}

// TestInboxAbort checks that PushAbort queues EvAbort, wakes the consumer, and keeps its
// cause for AbortErr.
func TestInboxAbort(t *testing.T) {
	q := NewInbox()
	require.NoError(t, q.AbortErr())
	q.PushAbort(context.DeadlineExceeded)
	require.True(t, woken(q))
	require.ErrorIs(t, q.AbortErr(), context.DeadlineExceeded)
	events, _ := q.Take(nil, nil)
	require.Equal(t, []Event{{Kind: EvAbort}}, events)
}

// TestInboxConcurrent runs producers that push events and completions against a consumer
// that sleeps on the wake-up channel alone, then closes the inbox while they still push.
// Every wake-up the consumer needs comes (a lost one fails the test after waitBound), every
// event the inbox accepted and every completion queued before Close is taken exactly once,
// by Take or by Close, each producer's in its order, and nothing gets in after Close.
func TestInboxConcurrent(t *testing.T) {
	const producers, each = 8, 1000
	recs := make([]*callcore.Call, each)
	index := make(map[*callcore.Call]int, each)
	for i := range recs {
		recs[i] = new(callcore.Call)
		index[recs[i]] = i
	}
	q := NewInbox()
	accepted := make([]int, producers) // events each producer had accepted; read after wg.Wait
	var wg sync.WaitGroup
	for p := range producers {
		wg.Go(func() {
			for i := range each {
				ok := q.Push(Event{Kind: EvCancel, C: recs[i], Gen: uint32(p)})
				if ok && accepted[p] < i {
					t.Errorf("producer %d: event %d accepted after event %d was refused", p, i, accepted[p])
				}
				if ok {
					accepted[p]++
				}
				q.Complete(Completion{C: recs[i], Inv: int32(p)})
			}
		})
	}

	nextEvent := make([]int, producers)
	nextDone := make([]int, producers)
	taken := 0
	check := func(events []Event, done []Completion) {
		for _, e := range events {
			require.Equal(t, nextEvent[e.Gen], index[e.C], "producer %d's events out of order or twice", e.Gen)
			nextEvent[e.Gen]++
		}
		for _, d := range done {
			require.Equal(t, nextDone[d.Inv], index[d.C], "producer %d's completions out of order or twice", d.Inv)
			nextDone[d.Inv]++
		}
		taken += len(events) + len(done)
	}
	var events []Event
	var done []Completion
	for taken < producers*each { // half of the events and completions: producers still push
		receive(t, q.Wake(), "wake-up with events or completions queued")
		events, done = q.Take(events, done)
		check(events, done)
	}
	check(q.Close())
	wg.Wait()
	require.Zero(t, q.Pending())
	for p := range producers {
		require.Equal(t, accepted[p], nextEvent[p], "producer %d: events accepted and taken", p)
		// Each completion follows its event: one queued after an accepted event, by the
		// time the next event was accepted, was queued before Close.
		require.Contains(t, []int{accepted[p] - 1, accepted[p]}, nextDone[p], "producer %d: completions lost", p)
	}
}

// settledAt returns a call whose settle time, as the outbox reads it, is at.
func settledAt(at int64) *callcore.Call { return &callcore.Call{Submitted: at} }

// TestOutboxPushSwap checks that pushes keep their order, in batches larger than a chunk as
// well, that Len and Inspect show what is queued, and that Swap takes the queue's own slice,
// copying nothing, and leaves the queue the spare slice to append into.
func TestOutboxPushSwap(t *testing.T) {
	cases := []struct {
		name    string
		batches []int // the sizes of the pushes
	}{
		{"one call", []int{1}},
		{"three pushes", []int{3, 1, 2}},
		{"one chunk", []int{outboxChunk}},
		{"one over a chunk", []int{outboxChunk + 1}},
		{"chunks and single calls", []int{1, 2*outboxChunk + 3, 1}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q Outbox
			var want []*callcore.Call
			for _, n := range tc.batches {
				batch := make([]*callcore.Call, n)
				for i := range batch {
					batch[i] = settledAt(int64(len(want) + i))
				}
				q.Push(batch...)
				want = append(want, batch...)
				require.Equal(t, len(want), q.Len())
			}
			var queued []*callcore.Call
			q.Inspect(func(calls []*callcore.Call) { queued = calls })
			require.Equal(t, want, queued)

			spare := make([]*callcore.Call, 0, 4)
			got, ok := q.Swap(spare, true)
			require.True(t, ok)
			require.Equal(t, want, got)
			require.Same(t, &queued[0], &got[0], "swap copied the queue")
			require.Zero(t, q.Len())
			q.Inspect(func(calls []*callcore.Call) { require.Empty(t, calls) })

			next := settledAt(int64(len(want)))
			q.Push(next)
			q.Inspect(func(calls []*callcore.Call) {
				require.Equal(t, []*callcore.Call{next}, calls)
				require.Same(t, &spare[:1][0], &calls[0], "the queue does not append into the spare slice")
			})
		})
	}
}

// TestOutboxSwapWithoutWaiting checks that a Swap told not to wait gives up, handing its
// spare slice back and leaving the queue as it is, while another goroutine holds the lock
// (the test holds it here, as a lane appending would), and takes the queue once it is free.
func TestOutboxSwapWithoutWaiting(t *testing.T) {
	var q Outbox
	c := settledAt(1)
	q.Push(c)
	spare := make([]*callcore.Call, 0, 4)
	type swapped struct {
		calls []*callcore.Call
		ok    bool
	}
	q.mu.Lock()
	held := true
	defer func() {
		if held {
			q.mu.Unlock()
		}
	}()
	res := make(chan swapped, 1)
	go func() {
		got, ok := q.Swap(spare, false)
		res <- swapped{got, ok}
	}()
	r := receive(t, res, "return from a Swap told not to wait for the lock")
	q.mu.Unlock()
	held = false
	require.False(t, r.ok)
	require.Same(t, &spare[:1][0], &r.calls[:1][0], "the spare slice was not handed back")
	require.Empty(t, r.calls)
	require.Equal(t, 1, q.Len())
	at, ok := q.Oldest()
	require.True(t, ok)
	require.Equal(t, int64(1), at)

	got, ok := q.Swap(spare, false)
	require.True(t, ok)
	require.Equal(t, []*callcore.Call{c}, got)
	require.Zero(t, q.Len())
}

// TestOutboxOldest checks, step by step, the settle time Oldest reports: that of the first
// call queued, or of the first call not yet delivered of the batch Tick took, whichever is
// older, and none once every call is delivered.
func TestOutboxOldest(t *testing.T) {
	type step struct {
		do   string // push, swap, undelivered (the batch's first undelivered call) or delivered
		at   int64  // push: the call's settle time; undelivered: that call's
		want int64  // Oldest once the step is done; -1 for none
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"empty", nil},
		{"a settle time of zero is one", []step{{"push", 0, 0}, {"swap", 0, 0}, {"delivered", 0, -1}}},
		{"queued: the first call's", []step{{"push", 10, 10}, {"push", 20, 10}}},
		{"taken by Tick: still waiting", []step{{"push", 10, 10}, {"push", 20, 10}, {"swap", 0, 10}}},
		{"the batch in hand and the queue: the older", []step{
			{"push", 10, 10}, {"swap", 0, 10}, {"push", 30, 10}, {"undelivered", 20, 20},
			{"delivered", 0, 30}, {"swap", 0, 30}, {"delivered", 0, -1},
		}},
		{"all delivered, then a push", []step{
			{"push", 10, 10}, {"swap", 0, 10}, {"delivered", 0, -1}, {"push", 40, 40},
		}},
		{"a swap of an empty queue: none waits", []step{
			{"push", 10, 10}, {"swap", 0, 10}, {"delivered", 0, -1}, {"swap", 0, -1},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q Outbox
			_, ok := q.Oldest()
			require.False(t, ok)
			var hand []*callcore.Call
			for i, s := range tc.steps {
				switch s.do {
				case "push":
					q.Push(settledAt(s.at))
				case "swap":
					hand, _ = q.Swap(hand[:0], true)
				case "undelivered":
					q.SetUndelivered(s.at)
				case "delivered":
					q.AllDelivered()
				}
				at, ok := q.Oldest()
				require.Equalf(t, s.want >= 0, ok, "step %d (%s): a call waits", i, s.do)
				if ok {
					require.Equalf(t, s.want, at, "step %d (%s)", i, s.do)
				}
			}
		})
	}
}

// TestOutboxOldestDuringSwap checks that a swap cannot hide a call from Oldest read on
// another goroutine, and that Oldest never reports a call already delivered. The Tick
// goroutine here pushes the next call before it delivers the batch in hand and swaps, so that
// a call always waits, in the queue or in hand. Oldest reads the queue's time and then the
// batch's, each atomically but not both at once: a read that a push overlaps may find the
// queue still empty and then the batch delivered, so the reads checked for a miss are those
// that no push overlapped, and in them only a swap can come between the two. Reading them the
// other way round fails it only when a swap falls between the two reads: by chance, in some
// runs, as a race is caught.
func TestOutboxOldestDuringSwap(t *testing.T) {
	const rounds = 50000
	var q Outbox
	q.Push(settledAt(1))
	hand, _ := q.Swap(nil, true)
	var pushing atomic.Int64   // odd while the Tick goroutine pushes
	var delivered atomic.Int64 // the settle time of the last call delivered
	var checked, misses, stale atomic.Int64
	started, stop := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		close(started)
		for {
			select {
			case <-stop:
				return
			default:
			}
			before, p := delivered.Load(), pushing.Load()
			at, ok := q.Oldest()
			if ok && at <= before {
				stale.Add(1)
			}
			if p%2 == 0 && pushing.Load() == p {
				checked.Add(1)
				if !ok {
					misses.Add(1)
				}
			}
		}
	})
	<-started
	for i := int64(2); i <= rounds; i++ {
		pushing.Add(1)
		q.Push(settledAt(i))
		pushing.Add(1)
		q.AllDelivered()
		delivered.Store(i - 1)
		hand, _ = q.Swap(hand[:0], true)
	}
	close(stop)
	wg.Wait()
	require.Positive(t, checked.Load(), "no read was checked")
	require.Zero(t, misses.Load(), "reads that found no call waiting, of %d checked", checked.Load())
	require.Zero(t, stale.Load(), "reads that reported a call already delivered")
}

// TestOutboxConcurrentPushers runs lanes that push one call at a time and a pusher of large
// batches, as the reactor goroutine pushes, against a Tick goroutine that swaps without
// waiting while they push: every call is taken exactly once, each pusher's in its order.
func TestOutboxConcurrentPushers(t *testing.T) {
	const lanes, each = 6, 1000
	const batches, batch = 4, outboxChunk + 7
	var q Outbox
	owner := map[*callcore.Call][2]int{}
	calls := make([][]*callcore.Call, lanes+1) // the batch pusher's last
	for p := range calls {
		n := each
		if p == lanes {
			n = batches * batch
		}
		calls[p] = make([]*callcore.Call, n)
		for i := range calls[p] {
			calls[p][i] = settledAt(int64(i))
			owner[calls[p][i]] = [2]int{p, i}
		}
	}
	var wg sync.WaitGroup
	for p := range lanes {
		wg.Go(func() {
			for _, c := range calls[p] {
				q.Push(c)
			}
		})
	}
	wg.Go(func() {
		for b := range batches {
			q.Push(calls[lanes][b*batch : (b+1)*batch]...)
		}
	})
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()

	next := make([]int, lanes+1)
	taken := 0
	var hand []*callcore.Call
	take := func(wait bool) {
		var ok bool
		hand, ok = q.Swap(hand[:0], wait)
		if !ok {
			return
		}
		for _, c := range hand {
			o := owner[c]
			require.Equal(t, next[o[0]], o[1], "pusher %d's calls out of order or twice", o[0])
			next[o[0]]++
		}
		taken += len(hand)
		clear(hand)
	}
	for finished := false; !finished; {
		select {
		case <-done:
			finished = true
		default:
		}
		take(false)
	}
	take(true)
	require.Equal(t, lanes*each+batches*batch, taken)
	require.Zero(t, q.Len())
	q.AllDelivered()
	_, ok := q.Oldest()
	require.False(t, ok)
}
