package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/trixnew/prpc/examples/dataservice/server"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// maxLogged is the number of errors errLog prints; later ones are only counted.
const maxLogged = 10

// errLog prints errors to stderr, the first maxLogged of them, so that a dead backend does
// not flood the terminal. Like the world, it is used only on the loop goroutine.
type errLog struct {
	out io.Writer
	n   int
}

func newErrLog(out io.Writer) *errLog { return &errLog{out: out} }

// printf logs one error, unless maxLogged have been logged already.
func (l *errLog) printf(format string, a ...any) {
	l.n++
	switch {
	case l.n <= maxLogged:
		fmt.Fprintf(l.out, "gameloop: "+format+"\n", a...)
	case l.n == maxLogged+1:
		fmt.Fprintln(l.out, "gameloop: further errors are counted in the summary, not shown")
	}
}

// fatal logs the error that ends the run.
func (l *errLog) fatal(format string, a ...any) {
	fmt.Fprintf(l.out, "gameloop: "+format+"\n", a...)
}

// reporter prints the status line and keeps the times the summary needs. It runs on the loop
// goroutine.
type reporter struct {
	out         io.Writer
	tps         int
	start       time.Time // Run called
	first, last time.Time // start of the first and of the latest tick of play (OnTick)
	played      uint64    // ticks of play: the loop's drain at shutdown ticks without OnTick
	stopAt      time.Time // stop requested (duration elapsed or signal)
	lastAt      time.Time // previous status line
	lastSettled uint64    // calls settled at the previous status line
}

func newReporter(out io.Writer, tps int) *reporter { return &reporter{out: out, tps: tps} }

// tickAt records the start of tick n and returns the time.
func (rp *reporter) tickAt(n uint64) time.Time {
	now := time.Now()
	if n == 0 {
		rp.first = now
	}
	rp.last, rp.played = now, n+1
	return now
}

// status prints one status line, such as
//
//	t=3s TPS 20.0 tick p99 0.41ms | RPC 812/s p99 1.9ms | pending 3 | online 87 | errors 0
//
// TPS and tick p99 come from the loop; RPC/s is the number of calls settled since the
// previous line per second; RPC p99 (submission to callback), pending and errors (failed
// calls) come from the reactor.
func (rp *reporter) status(now time.Time, ls loop.Stats, rs reactor.Stats, online int) {
	failed := sumFailed(rs.Failed)
	settled := rs.Succeeded + failed
	since := rp.lastAt
	if since.IsZero() {
		since = rp.start
	}
	rate := 0.0
	if dt := now.Sub(since).Seconds(); dt > 0 {
		rate = float64(settled-rp.lastSettled) / dt
	}
	rp.lastAt, rp.lastSettled = now, settled
	fmt.Fprintf(rp.out, "t=%ds TPS %.1f tick p99 %s | RPC %.0f/s p99 %s | pending %d | online %d | errors %d\n",
		int(now.Sub(rp.start).Round(time.Second)/time.Second), ls.TPS, ms(ls.TickP99),
		rate, ms(rs.Latency.P99), rs.Pending, online, failed)
}

// ms formats d in milliseconds with two significant decimals below 10 ms.
func ms(d time.Duration) string {
	f := float64(d) / float64(time.Millisecond)
	switch {
	case f < 1:
		return fmt.Sprintf("%.2fms", f)
	case f < 10:
		return fmt.Sprintf("%.1fms", f)
	default:
		return fmt.Sprintf("%.0fms", f)
	}
}

// sumFailed returns the number of failed calls.
func sumFailed(m map[codes.Code]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// byCode formats failure counts as "Unavailable 3, DeadlineExceeded 1", by code.
func byCode(m map[codes.Code]uint64) string {
	keys := make([]codes.Code, 0, len(m))
	for c, n := range m {
		if n > 0 {
			keys = append(keys, c)
		}
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, c := range keys {
		parts[i] = fmt.Sprintf("%v %d", c, m[c])
	}
	return strings.Join(parts, ", ")
}

// summary is everything the final report says.
type summary struct {
	cfg                *config
	target             string
	start, stopAt, end time.Time
	first, last        time.Time // start of the first and of the latest tick of play
	played             uint64    // ticks of play, from first to last
	loop               loop.Stats
	calls              reactor.Stats
	world              counters
	board              leaderboard   // the leaderboard's stream, as the game left it
	online             int           // players still online when the loop stopped (0 normally)
	runErr             error         // from loop.Run: the drain timed out and Close cut calls off
	backend            *server.Stats // the in-process backend's counts, if there is one
	backendErr         error         // the in-process backend stopped serving during the game
	verify             *verifyResult
}

// print writes the summary.
func (s *summary) print(out io.Writer) {
	p := func(format string, a ...any) { fmt.Fprintf(out, format+"\n", a...) }
	stopAt := s.stopAt
	if stopAt.IsZero() {
		stopAt = s.end
	}
	p("--- summary ---")
	p("run        %.2fs: played %.2fs, then %.2fs for the final saves and shutdown",
		s.end.Sub(s.start).Seconds(), stopAt.Sub(s.start).Seconds(), s.end.Sub(stopAt).Seconds())

	tps := 0.0 // over the ticks of play: the drain's ticks come after the last of them
	if s.played > 1 {
		tps = float64(s.played-1) / s.last.Sub(s.first).Seconds()
	}
	window := ""
	if s.loop.Ticks > loop.StatsWindow {
		window = fmt.Sprintf(" (last %d ticks)", loop.StatsWindow)
	}
	p("loop       %d ticks, %d skipped, %d overruns, %.1f TPS measured (target %d); tick p50 %s p99 %s max %s%s",
		s.loop.Ticks, s.loop.Skipped, s.loop.Overruns, tps, s.cfg.tps,
		ms(s.loop.TickP50), ms(s.loop.TickP99), ms(s.loop.TickMax), window)

	failed := sumFailed(s.calls.Failed)
	codesText := ""
	if failed > 0 {
		codesText = " (" + byCode(s.calls.Failed) + ")"
	}
	p("calls      submitted %d, succeeded %d, failed %d%s, pending %d; at shutdown: %d delivered by the drain, %d cut off",
		s.calls.Submitted, s.calls.Succeeded, failed, codesText, s.calls.Pending, s.loop.Drained, s.calls.CutOff)
	lat := s.calls.Latency
	p("latency    p50 %s p95 %s p99 %s max %s (last %d calls, submission to callback)",
		ms(lat.P50), ms(lat.P95), ms(lat.P99), ms(lat.Max), lat.Samples)

	c := s.world
	p("players    %d: joins %d (found %d, new %d, failed %d, abandoned at stop %d), sessions %d",
		s.cfg.players, c.joins, c.joinsFound, c.joinsNew, c.joinsFailed, c.joinsAbandoned, c.sessions)
	p("saves      ok %d, failed %d; autosaves %d, final saves %d; autosaves skipped: %d with a save in flight, %d with nothing to save; final saves queued behind a save: %d",
		c.savesOK, c.savesFailed, c.autosaves, c.finalSaves, c.autosavesSkipped, c.autosavesClean, c.finalsQueued)
	p("stream     the leaderboard: %s", s.board.summary())
	if s.backend != nil {
		p("backend    received GetPlayer %d, SavePlayer %d (in-process data service, during the game)",
			s.backend.Gets, s.backend.Saves)
	}
	if s.verify != nil {
		s.verify.print(out)
	}
}

// failures returns why the run failed, if it did.
func (s *summary) failures() []string {
	var r []string
	add := func(format string, a ...any) { r = append(r, fmt.Sprintf(format, a...)) }
	if s.backendErr != nil {
		add("%v", s.backendErr)
	}
	if s.runErr != nil {
		add("the shutdown drain timed out after %v and closing the reactor cut %d calls off: %v", s.cfg.drainTimeout, s.calls.CutOff, s.runErr)
	}
	failed := sumFailed(s.calls.Failed)
	if s.calls.Pending != 0 || s.calls.Submitted != s.calls.Succeeded+failed {
		add("not every call settled: submitted %d, succeeded %d, failed %d, pending %d",
			s.calls.Submitted, s.calls.Succeeded, failed, s.calls.Pending)
	}
	if failed > 0 {
		add("%d calls failed (%s)", failed, byCode(s.calls.Failed))
		if s.calls.Failed[codes.Unavailable] > 0 {
			add("Unavailable: is a DataService listening at %s?", s.target)
		}
	}
	if s.online != 0 {
		add("%d players were still online when the loop stopped", s.online)
	}
	if msg := s.board.problem(); msg != "" {
		add("%s", msg)
	}
	if s.world.panics > 0 {
		add("%d promise callbacks panicked", s.world.panics)
	}
	if s.verify != nil && !s.verify.passed() {
		add("verification failed: %s", s.verify.reason())
	}
	return r
}
