package reactor

import (
	"maps"
	"sync/atomic"

	"google.golang.org/grpc/codes"
)

// StreamStats are the statistics of one method's streams (Watch, Bidi), in
// MethodStats.Streams; zero for a method whose streams were never opened. In every snapshot
//
//	Received = Delivered + Waiting + Replaced + Discarded
//	Opened = Open + Σ Ended
//
// Streams count in none of the calls' counters (Submitted, Pending, Failed, …).
//
// No counter is shared between streams while they run: each stream counts its messages in
// atomics of its own, its method's counters take them in when its end is delivered, and a
// snapshot adds up the open streams' as it copies the counters. The counters never decrease;
// Open and Waiting are gauges.
type StreamStats struct {
	// Opened counts the streams Watch and Bidi opened, those refused at open included (their
	// end is delivered at the next Tick, with its code in Ended).
	Opened uint64
	// Reopened counts the reopenings of streams ended by a transient code and opened again
	// by their resubscription policy; a stream reopened counts once in Opened however many
	// times it reopens.
	Reopened uint64
	// Open is the number of streams opened whose end Tick has not delivered yet.
	Open int
	// Ended counts the streams' ends Tick delivered, by gRPC code: codes.OK for a stream the
	// server ended with OK, else the code of the end's error (the server's, Canceled for
	// Cancel, CloseStreams, Shutdown and Close, …), refusals at open included. Nil while no
	// stream of the method has ended.
	Ended map[codes.Code]uint64
	// Received counts the messages read from the streams and queued for Tick (a message read
	// after the stream was stopped is dropped by its receiver uncounted).
	Received uint64
	// Delivered counts the messages Tick handed to OnMessage (or OnMessages).
	Delivered uint64
	// Replaced counts the messages that a newer one replaced while they waited for Tick
	// (StreamOptions.KeepLatest).
	Replaced uint64
	// Discarded counts the messages that waited for Tick when their stream was stopped
	// (Cancel, CloseStreams, Shutdown, Close): Tick freed their places without handing them
	// to OnMessage or OnMessages.
	Discarded uint64
	// Waiting is the number of messages received and waiting for Tick, at most
	// StreamOptions.MaxWaiting for each open stream (1 with KeepLatest).
	Waiting int
	// Stalls counts the times a stream's receiver stopped reading because MaxWaiting
	// messages waited for Tick: each is a pause of the server's sending, held back by HTTP/2
	// flow control until Tick frees a place.
	Stalls uint64
	// Sent counts the messages of Bidi streams handed to gRPC successfully (SendMsg returned
	// no error).
	Sent uint64
	// Unsent counts the messages of Bidi streams that Send accepted and gRPC never got:
	// those BidiStream.Unsent lists, counted when the end is delivered.
	Unsent uint64
}

// streamTally is what a stream counts of itself that its ring does not (received, consumed,
// replaced and stalls are the ring's: streamring.go), in atomics that only the stream's own
// goroutines write, so that nothing shared is written per message. Stats reads them while the
// stream is open (streamCounts); its method's counters take them in when its end is delivered
// (endStream).
type streamTally struct {
	entry *methodEntry // the method's counters; set at open
	// discardFrom is 1 + the number of messages Tick had consumed when it first discarded
	// one, zero while it has discarded none. Once a stream is stopped, every later message is
	// discarded, so this one store, made before consumed counts that message, splits consumed
	// into delivered and discarded at no cost per message.
	discardFrom atomic.Uint64
	sent        atomic.Uint64 // the sender's: messages SendMsg took
	// reopened counts the stream's reopenings (resubscription): add to it as each reopening
	// begins, from any goroutine; Stats and the end's fold read it as they read the others.
	reopened atomic.Uint64
}

// noteDiscard records, on the Tick goroutine, that the message about to be counted in
// consumed is discarded: the first discard fixes where they begin.
func (s *stream) noteDiscard() {
	if s.discardFrom.Load() == 0 {
		s.discardFrom.Store(s.consumed.Load() + 1)
	}
}

// streamCounts returns s's counts so far, as StreamStats counts them. It reads the
// receiver's count before the Tick goroutine's, and takes no more consumed than received, so
// that each figure it returns never decreases from one reading to the next, Waiting is
// between zero and MaxWaiting, and the identity Received = Delivered + Waiting + Replaced +
// Discarded holds whatever the stream's goroutines do meanwhile.
func (s *stream) streamCounts() StreamStats {
	received := s.received.Load()
	consumed := min(s.consumed.Load(), received)
	delivered := consumed
	if f := s.discardFrom.Load(); f != 0 {
		delivered = min(consumed, f-1)
	}
	replaced := s.replaced.Load()
	return StreamStats{
		Reopened:  s.reopened.Load(),
		Received:  received + replaced,
		Delivered: delivered,
		Replaced:  replaced,
		Discarded: consumed - delivered,
		Waiting:   int(received - consumed),
		Stalls:    s.stalls.Load(),
		Sent:      s.sent.Load(),
	}
}

// add adds o's counters and gauges to st's, but for Opened, Open and Ended.
func (st *StreamStats) add(o *StreamStats) {
	st.Reopened += o.Reopened
	st.Received += o.Received
	st.Delivered += o.Delivered
	st.Replaced += o.Replaced
	st.Discarded += o.Discarded
	st.Waiting += o.Waiting
	st.Stalls += o.Stalls
	st.Sent += o.Sent
	st.Unsent += o.Unsent
}

// streamCounters are a method's stream counters, under the counters' mutex: opens counted as
// they happen, ends as Tick delivers them, each with the ended stream's own counts folded in.
type streamCounters struct {
	opened  uint64
	ended   map[codes.Code]uint64
	endedN  uint64      // the sum of ended
	folded  StreamStats // the ended streams' message counts (Waiting stays zero)
	touched bool        // a stream of the method was opened
}

// countStreamOpen counts the opening of a stream of the method whose entry is e, admitted or
// refused.
func (r *Reactor) countStreamOpen(e *methodEntry) {
	r.mu.Lock()
	e.counters.streams.opened++
	e.counters.streams.touched = true
	r.mu.Unlock()
}

// countStreamEnd counts, on the Tick goroutine, the delivered end of a stream of the method
// whose entry is e, with err its error. s is the stream, nil for one refused at open: under
// the counters' mutex, so that a snapshot sees it either open or ended, it is removed from
// the stream table and its counts are folded into its method's, with unsent the number of
// messages Unsent lists.
func (r *Reactor) countStreamEnd(e *methodEntry, s *stream, err error, unsent int) {
	code := errCode(err)
	r.mu.Lock()
	defer r.mu.Unlock()
	c := &e.counters.streams
	if c.ended == nil {
		c.ended = make(map[codes.Code]uint64)
	}
	c.ended[code]++
	c.endedN++
	if s == nil {
		return
	}
	r.streams.remove(s)
	counts := s.streamCounts()
	counts.Unsent = uint64(unsent)
	counts.Waiting = 0 // every message is delivered or discarded before the end
	c.folded.add(&counts)
}

// streamStatsLocked returns the stream counters of the method whose counters are m, the open
// streams' not included; counters' mutex held.
func (m *methodCounters) streamStatsLocked() StreamStats {
	c := &m.streams
	if !c.touched {
		return StreamStats{}
	}
	st := c.folded
	st.Opened = c.opened
	st.Open = int(c.opened - c.endedN)
	st.Ended = maps.Clone(c.ended)
	return st
}

// addOpenStreams adds the counts of the streams in the table to their methods' entries of
// byPath, with the counters' mutex held (the lock order is the counters', then the table's).
func (t *streamTable) addOpenStreams(byPath map[string]*StreamStats) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for s := range t.live {
		st := byPath[s.entry.path]
		if st == nil {
			continue // cannot happen: a stream's open is counted, under the same mutex, before it is added
		}
		counts := s.streamCounts()
		st.add(&counts)
	}
}
