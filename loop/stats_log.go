package loop

import (
	"log/slog"
	"math"
)

var _ slog.LogValuer = Stats{}

// LogValue implements slog.LogValuer, so that logger.Info("loop", "stats", l.Stats()) logs a
// group of the figures a person reads at a glance, in this order (here as slog.TextHandler
// writes them):
//
//	stats.ticks=1200 stats.skipped=0 stats.overruns=1 stats.tps=19.98
//	stats.tick.p50=310µs stats.tick.p99=2.1ms stats.tick.max=7ms
//	stats.wakeups=35 stats.delivered=4810
//
// tps is TPS rounded to two decimals. drained, the shutdown's figure, follows only when it is
// not zero. Delivery and DeliveryLastTick are not logged: log those fields where they are
// wanted.
func (s Stats) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.Uint64("ticks", s.Ticks),
		slog.Uint64("skipped", s.Skipped),
		slog.Uint64("overruns", s.Overruns),
		slog.Float64("tps", math.Round(s.TPS*100)/100),
		slog.Group("tick",
			slog.Duration("p50", s.TickP50),
			slog.Duration("p99", s.TickP99),
			slog.Duration("max", s.TickMax),
		),
		slog.Uint64("wakeups", s.Wakeups),
		slog.Uint64("delivered", s.Delivered),
	}
	if s.Drained > 0 {
		attrs = append(attrs, slog.Uint64("drained", s.Drained))
	}
	return slog.GroupValue(attrs...)
}
