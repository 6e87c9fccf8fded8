package loop

import (
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/trixnew/prpc/internal/histogram"
	"github.com/trixnew/prpc/reactor"
)

// StatsWindow is the number of most recent ticks over which Stats computes tick-duration
// percentiles: one minute at the default 20 TPS, 1.2 s at MaxTPS. It also holds at least
// the last second of ticks that Stats.TPS measures.
const StatsWindow = 1200

// Stats is a snapshot of a Loop. Counters cover the whole Run; TPS and the tick durations
// cover recent ticks. Durations are measured with Config.Clock.
type Stats struct {
	// Ticks is the number of ticks run.
	Ticks uint64
	// Skipped is the number of due times passed over because ticks ran late: they got no
	// tick (see Run). Ticks + Skipped is the number of periods the schedule has advanced.
	Skipped uint64
	// Overruns is the number of ticks that ended after the next tick's due time.
	Overruns uint64

	// TPS is the measured tick rate. With t the start of the latest tick and a the start of
	// the latest earlier tick that started at least one second before t (or of the first
	// tick, if none did), TPS = (number of ticks that started after a, up to and including
	// the one at t) ÷ (t − a in seconds). It is 0 before the second tick. At a steady rate it
	// equals Config.TPS; skipped ticks lower it, and after a stall of s seconds it is about
	// 1/s until the next second of ticks.
	TPS float64

	// TickP50 and TickP99 are the nearest-rank 50th and 99th percentiles, and TickMax the
	// maximum, of the durations of the last StatsWindow ticks (fewer before that many have
	// run). A tick's duration runs from its start, through OnTick and each reactor's Tick,
	// to the end of the last Tick; wake-ups between ticks are not part of it. The p-th
	// nearest-rank percentile of n sorted durations is the ⌈p·n/100⌉-th.
	TickP50, TickP99, TickMax time.Duration

	// Delivery is the total time spent in the reactors' Tick calls, in ticks and wake-ups.
	Delivery time.Duration
	// DeliveryLastTick is the time spent in the reactors' Tick calls in the latest tick.
	DeliveryLastTick time.Duration
	// Wakeups is the number of times the loop woke between ticks because reactors signalled
	// Ready, and drained them. A wake-up may find nothing left to deliver.
	Wakeups uint64
	// Delivered is the sum of TickReport.Delivered over every Tick call, in ticks and
	// wake-ups. Callbacks run by Close at shutdown are not counted.
	Delivered uint64
	// Drained is the part of Delivered delivered while Run drained the reactors at shutdown,
	// after OnStop returned: the last calls and the calls their callbacks chained, whose
	// callbacks ran before the reactors were closed. The calls that closing cut off are
	// counted by each reactor's Stats().CutOff.
	Drained uint64
}

// Stats returns a snapshot of l's counters. It is safe from any goroutine, at any time
// (before, during and after Run). It takes l's mutex, which the loop takes once at the end of
// each tick and wake-up, and holds it for a copy of the counters and O(log StatsWindow) work;
// it allocates nothing (BenchmarkStats measures it).
func (l *Loop) Stats() Stats {
	return l.meter.snapshot()
}

// TickDurations returns the durations of every tick since Run began (each measured as
// Stats.TickP50's are) in a cumulative histogram, with the buckets of reactor.Histogram: what
// a metrics system graphs as the loop's tick time, and aggregates across scrapes and servers,
// which the window of TickP50, TickP99 and TickMax cannot be. It is safe from any goroutine;
// it takes the mutex Stats takes, for a copy of the counts, and allocates that copy and one of
// the bounds, its own.
func (l *Loop) TickDurations() reactor.Histogram {
	return l.meter.tickDurations()
}

func (m *meter) tickDurations() reactor.Histogram {
	var s histogram.Snapshot
	m.mu.Lock()
	m.durations.Snapshot(&s)
	m.mu.Unlock()
	return reactor.Histogram{Bounds: slices.Clone(s.Bounds.Seconds()), Counts: s.Counts, Count: s.Count, Sum: s.Sum}
}

// tickSample is what one tick reports to the meter.
type tickSample struct {
	at, dur   time.Duration // start, relative to Run's start; duration
	delivery  time.Duration
	delivered uint64
	skipped   uint64
	overrun   bool
	drain     bool // a tick of the shutdown drain
}

// meter accumulates Stats. The loop goroutine writes it once per tick and wake-up; Stats
// reads it.
type meter struct {
	mu     sync.Mutex
	st     Stats // counters; TPS and percentiles are computed in snapshot
	at     [StatsWindow]time.Duration
	dur    [StatsWindow]time.Duration
	sorted []time.Duration // the window's durations, sorted
	head   int             // next slot of at and dur to write
	n      int             // ticks in the window
	// durations counts every tick's duration since Run began, for TickDurations.
	durations histogram.Histogram
}

func (m *meter) init() {
	m.sorted = make([]time.Duration, 0, StatsWindow)
	m.durations.Init(histogram.DefaultLatency())
}

func (m *meter) tick(s tickSample) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.n == StatsWindow {
		old := m.dur[m.head]
		i, _ := slices.BinarySearch(m.sorted, old)
		m.sorted = slices.Delete(m.sorted, i, i+1)
	} else {
		m.n++
	}
	m.at[m.head], m.dur[m.head] = s.at, s.dur
	m.head = (m.head + 1) % StatsWindow
	i, _ := slices.BinarySearch(m.sorted, s.dur)
	m.sorted = slices.Insert(m.sorted, i, s.dur)

	m.durations.Observe(s.dur)
	m.st.Ticks++
	m.st.Skipped += s.skipped
	if s.overrun {
		m.st.Overruns++
	}
	m.st.Delivery += s.delivery
	m.st.DeliveryLastTick = s.delivery
	m.st.Delivered += s.delivered
	if s.drain {
		m.st.Drained += s.delivered
	}
}

func (m *meter) wakeup(delivery time.Duration, delivered uint64, drain bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.st.Wakeups++
	m.st.Delivery += delivery
	m.st.Delivered += delivered
	if drain {
		m.st.Drained += delivered
	}
}

func (m *meter) snapshot() Stats {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.st
	if m.n == 0 {
		return s
	}
	s.TickP50 = m.sorted[rank(50, m.n)-1]
	s.TickP99 = m.sorted[rank(99, m.n)-1]
	s.TickMax = m.sorted[m.n-1]
	if m.n >= 2 {
		// at(i) is the start of the i-th oldest tick in the window.
		at := func(i int) time.Duration { return m.at[(m.head-m.n+i+StatsWindow)%StatsWindow] }
		t := at(m.n - 1)
		a := sort.Search(m.n, func(i int) bool { return at(i) > t-time.Second }) - 1
		a = max(a, 0)
		if span := t - at(a); span > 0 {
			s.TPS = float64(m.n-1-a) / span.Seconds()
		}
	}
	return s
}

// rank returns the 1-based nearest rank of the p-th percentile of n values: ⌈p·n/100⌉.
func rank(p, n int) int {
	return max((p*n+99)/100, 1)
}
