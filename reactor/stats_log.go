package reactor

import (
	"log/slog"
	"slices"

	"google.golang.org/grpc/codes"
)

var _ slog.LogValuer = Stats{}

// LogValue implements slog.LogValuer, so that logger.Info("prpc", "stats", r.Stats()) logs a
// group of the figures a person reads at a glance, in this order (here as slog.TextHandler
// writes them):
//
//	stats.pending=3 stats.queued=0 stats.in_flight=3 stats.submitted=120 stats.succeeded=110
//	stats.failed.total=7 stats.failed.DeadlineExceeded=2 stats.failed.Unavailable=5
//	stats.timed_out=2 stats.overloaded=0 stats.cancelled=0 stats.closed=0 stats.never_sent=0
//	stats.latency.p50=1.2ms stats.latency.p99=8ms stats.latency.queue_wait_p99=0s
//	stats.latency.transport_p99=7ms stats.latency.tick_wait_p99=1ms
//	stats.oldest_undelivered=0s stats.state=READY
//
// failed holds the total of Failed and, for each code with failures, its count under the
// code's name (codes.Code.String), in code order. latency holds Latency's P50 and P99 and the
// P99 of QueueWait, Transport and TickWait. state is the connectivity state, left out
// when StateKnown is false. streams_open and messages_waiting (StreamsOpen, MessagesWaiting),
// then drained and cut_off, the shutdown's figures, follow only when they are not zero. The breakdowns by invoker, method and backend, the percentiles' other
// figures and LastConnError are not logged: log those fields where they are wanted.
func (s Stats) LogValue() slog.Value {
	failing := make([]codes.Code, 0, len(s.Failed))
	var total uint64
	for code, n := range s.Failed {
		if n > 0 {
			failing = append(failing, code)
			total += n
		}
	}
	slices.Sort(failing)
	failed := make([]slog.Attr, 0, 1+len(failing))
	failed = append(failed, slog.Uint64("total", total))
	for _, code := range failing {
		failed = append(failed, slog.Uint64(code.String(), s.Failed[code]))
	}
	attrs := []slog.Attr{
		slog.Int("pending", s.Pending),
		slog.Int("queued", s.Queued),
		slog.Int("in_flight", s.InFlight),
		slog.Uint64("submitted", s.Submitted),
		slog.Uint64("succeeded", s.Succeeded),
		{Key: "failed", Value: slog.GroupValue(failed...)},
		slog.Uint64("timed_out", s.TimedOut),
		slog.Uint64("overloaded", s.Overloaded),
		slog.Uint64("cancelled", s.Cancelled),
		slog.Uint64("closed", s.Closed),
		slog.Uint64("never_sent", s.NeverSent),
		slog.Group("latency", slog.Duration("p50", s.Latency.P50), slog.Duration("p99", s.Latency.P99),
			slog.Duration("queue_wait_p99", s.QueueWait.P99), slog.Duration("transport_p99", s.Transport.P99),
			slog.Duration("tick_wait_p99", s.TickWait.P99)),
		slog.Duration("oldest_undelivered", s.OldestUndelivered),
	}
	if s.StateKnown {
		attrs = append(attrs, slog.String("state", s.State.String()))
	}
	if s.StreamsOpen > 0 {
		attrs = append(attrs, slog.Int("streams_open", s.StreamsOpen))
	}
	if s.MessagesWaiting > 0 {
		attrs = append(attrs, slog.Int("messages_waiting", s.MessagesWaiting))
	}
	if s.Drained > 0 {
		attrs = append(attrs, slog.Uint64("drained", s.Drained))
	}
	if s.CutOff > 0 {
		attrs = append(attrs, slog.Uint64("cut_off", s.CutOff))
	}
	return slog.GroupValue(attrs...)
}
