// Command gameloop is prpc's end-to-end demo: a 20 TPS game loop whose simulated players load
// and save their profiles over gRPC, through prpc, without the loop ever waiting on the network.
//
// With no flags it starts the example data service in-process (in-memory SQLite on an
// ephemeral 127.0.0.1 port), runs for 10 seconds, prints a status line every second and a
// summary at the end, then reads every player back to check that the last save of each one
// is what the backend holds:
//
//	go run ./examples/gameloop
//
// What happens: players join over the first two seconds (GetPlayer: an existing profile is
// loaded, a missing one starts at level 1 with 0 coins), earn coins and levels every tick,
// autosave every -autosave (SavePlayer), leave after a session of 3 to 8 seconds with a final
// save, and rejoin 1 to 2 seconds later, so later joins find the profiles saved earlier. All
// of that runs on the loop goroutine; replies arrive as promise callbacks on the same
// goroutine, so the game state has no locks.
//
// Ctrl-C (SIGINT) or SIGTERM stops gracefully, like -duration elapsing: every online player
// leaves, the loop keeps ticking until their final saves have completed, and only then does
// it stop and close the reactor. A second Ctrl-C kills the process. If the in-process data
// service stops serving during the game, the game stops the same way and exits 1.
//
// Usage:
//
//	go run ./examples/gameloop [flags]
//
// The flags are:
//
//	-players n
//		Number of simulated players (default 100, at most 10000).
//	-duration d
//		How long to play before stopping (default 10s); 0 runs until Ctrl-C.
//	-tps n
//		Ticks per second of the game loop (default 20).
//	-budget d
//		Time budget of each reactor Tick, for running reply callbacks (default 2ms).
//	-autosave d
//		Autosave interval of each online player, staggered between players (default 2s).
//	-workers n, -batch n
//		Reactor invokers, and calls each keeps in flight (defaults 4 and 8).
//	-seed n
//		Seed of the game's random numbers (default 1).
//	-target host:port
//		Use this DataService backend (for example go run ./examples/dataservice) instead of
//		starting one in-process. Plaintext unless -tls-ca is given.
//	-tls-ca file
//		PEM CA certificates to verify the -target server with; enables TLS.
//	-tls-cert file, -tls-key file
//		PEM client certificate chain and key, presented to the server (mutual TLS). Need -tls-ca.
//	-tls-server-name name
//		Name the server certificate must carry, instead of the -target host. Needs -tls-ca.
//	-metrics-addr host:port
//		Serve Prometheus metrics at http://host:port/metrics while the game runs, for
//		example -metrics-addr 127.0.0.1:9464 (port 0 picks a free port; the status output
//		says which). Empty, the default, serves none. See Metrics below.
//
// # Metrics
//
// With -metrics-addr, the game serves /metrics from the start of the game until the
// read-back is done: prpc's metrics of the game's reactor and loop (package promprpc; the
// names are in docs/metrics.md), with the counts by backend address, and the Go runtime's
// and the process's. The line "gameloop: serving metrics at http://127.0.0.1:9464/metrics"
// on stdout gives the address. For example, in one terminal:
//
//	go run ./examples/gameloop -duration 0 -metrics-addr 127.0.0.1:9464
//
// and in another:
//
//	curl -s http://127.0.0.1:9464/metrics | grep '^prpc_call_completed_total'
//
// examples/grafana holds a Grafana dashboard of these metrics.
//
// Status lines and the summary go to stdout; logs and errors go to stderr. The exit status
// is 0 when every call submitted settled, none failed, and every player read back matches its
// last successful save; 1 otherwise, with the reasons on stderr; 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/trixnew/prpc/examples/dataservice/networkpb/networkpbprpc"
	"github.com/trixnew/prpc/examples/dataservice/server"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// maxPlayers bounds -players. Each player has at most one call outstanding, and the
// read-back adds one leaderboard call, so the reactors' MaxOutstanding is raised to
// players + 1 when the default is lower: overload cannot happen by construction.
const maxPlayers = 10000

// defaultDrainTimeout is the loop's ShutdownTimeout (config.drainTimeout): it bounds the drain
// in which the loop keeps ticking the reactor until the final saves have settled. Every call
// has a deadline (the reactor's DefaultTimeout, 1.5 s) and a player chains at most two saves
// (the one in flight when it leaves, then its final save), so a drain ends on its own within
// 3 s; this is only a safety net.
const defaultDrainTimeout = 2*reactor.DefaultTimeout + time.Second

// verifyTimeout bounds the read-back of every player after the loop has stopped.
const verifyTimeout = 10 * time.Second

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// config holds the parsed flags.
type config struct {
	target        string
	players       int
	duration      time.Duration
	tps           int
	budget        time.Duration
	autosave      time.Duration
	workers       int
	batch         int
	seed          uint64
	tlsCA         string
	tlsCert       string
	tlsKey        string
	tlsServerName string
	metricsAddr   string

	// onMetrics, if set, is called with the address the metrics server listens on once it
	// does. No flag sets it: tests set it to learn the port of a -metrics-addr with port 0.
	onMetrics func(addr string)

	// drainTimeout is the loop's ShutdownTimeout. No flag sets it: parseFlags sets
	// defaultDrainTimeout, and tests set less to make the drain time out.
	drainTimeout time.Duration
}

// parseFlags parses args into a config, writing usage and flag errors to stderr.
func parseFlags(args []string, stderr io.Writer) (config, error) {
	c := config{drainTimeout: defaultDrainTimeout}
	fs := flag.NewFlagSet("gameloop", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: go run ./examples/gameloop [flags]

Runs a game loop whose simulated players load and save their profiles through prpc,
against an in-process data service (or -target), prints a status line every second and a
summary, and verifies that every player's last save is what the backend holds.
Ctrl-C stops gracefully: players leave and their final saves complete before exit.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.target, "target", "", "DataService `host:port` to use instead of starting one in-process")
	fs.IntVar(&c.players, "players", 100, fmt.Sprintf("`number` of simulated players, 1 to %d", maxPlayers))
	fs.DurationVar(&c.duration, "duration", 10*time.Second, "how long to play before stopping; 0 runs until Ctrl-C")
	fs.IntVar(&c.tps, "tps", loop.DefaultTPS, fmt.Sprintf("game loop ticks per second, 1 to %d", loop.MaxTPS))
	fs.DurationVar(&c.budget, "budget", loop.DefaultBudget, "time budget of each reactor Tick for running reply callbacks")
	fs.DurationVar(&c.autosave, "autosave", 2*time.Second, "autosave interval of each online player (staggered between players)")
	fs.IntVar(&c.workers, "workers", reactor.DefaultWorkers, fmt.Sprintf("reactor invoker goroutines, 1 to %d", reactor.MaxWorkers))
	fs.IntVar(&c.batch, "batch", reactor.DefaultBatchSize, fmt.Sprintf("calls each invoker keeps in flight, 1 to %d", reactor.MaxBatchSize))
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the game's random numbers")
	fs.StringVar(&c.tlsCA, "tls-ca", "", "PEM CA certificates `file` to verify the -target server with; enables TLS")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "PEM client certificate chain `file` for mutual TLS; needs -tls-key and -tls-ca")
	fs.StringVar(&c.tlsKey, "tls-key", "", "PEM client private key `file` for mutual TLS; needs -tls-cert and -tls-ca")
	fs.StringVar(&c.tlsServerName, "tls-server-name", "", "`name` the server certificate must carry, instead of the -target host; needs -tls-ca")
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`host:port`/metrics while the game runs (e.g. 127.0.0.1:9464; port 0 picks one); none if empty")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q (flags only; see -h)", fs.Arg(0))
	}
	return c, c.check()
}

// check rejects flag values out of range or in conflict, naming the flag.
func (c *config) check() error {
	var errs []error
	bad := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if c.players < 1 || c.players > maxPlayers {
		bad("-players %d: must be from 1 to %d", c.players, maxPlayers)
	}
	if c.duration < 0 {
		bad("-duration %v: must not be negative (0 runs until Ctrl-C)", c.duration)
	}
	if c.tps < 1 || c.tps > loop.MaxTPS {
		bad("-tps %d: must be from 1 to %d", c.tps, loop.MaxTPS)
	}
	if c.budget <= 0 || c.budget > loop.MaxBudget {
		bad("-budget %v: must be more than 0 and at most %v", c.budget, loop.MaxBudget)
	}
	if c.autosave <= 0 {
		bad("-autosave %v: must be more than 0", c.autosave)
	}
	if c.workers < 1 || c.workers > reactor.MaxWorkers {
		bad("-workers %d: must be from 1 to %d", c.workers, reactor.MaxWorkers)
	}
	if c.batch < 1 || c.batch > reactor.MaxBatchSize {
		bad("-batch %d: must be from 1 to %d", c.batch, reactor.MaxBatchSize)
	}
	if (c.tlsCert == "") != (c.tlsKey == "") {
		bad("-tls-cert and -tls-key: give both or neither")
	}
	if c.tlsCA == "" && (c.tlsCert != "" || c.tlsKey != "" || c.tlsServerName != "") {
		bad("-tls-cert, -tls-key and -tls-server-name need -tls-ca (without it the connection is plaintext)")
	}
	if c.target == "" && c.tlsCA != "" {
		bad("-tls-ca needs -target: the in-process data service serves plaintext on loopback")
	}
	if c.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.metricsAddr); err != nil {
			bad("-metrics-addr %q: must be host:port (%v)", c.metricsAddr, err)
		}
	}
	return errors.Join(errs...)
}

// credentials returns the reactor credentials the TLS flags ask for.
func (c *config) credentials() reactor.Credentials {
	switch {
	case c.tlsCA == "":
		return reactor.Insecure()
	case c.tlsCert != "":
		return reactor.MutualTLSFiles(c.tlsCA, c.tlsCert, c.tlsKey, c.tlsServerName)
	default:
		return reactor.TLSFiles(c.tlsCA, c.tlsServerName)
	}
}

// reactorConfig returns the configuration of a reactor talking to target.
func (c *config) reactorConfig(target string, stderr io.Writer) reactor.Config {
	return reactor.Config{
		Target:         target,
		Credentials:    c.credentials(),
		Workers:        c.workers,
		BatchSize:      c.batch,
		MaxOutstanding: max(reactor.DefaultMaxOutstanding, c.players+1),
		Methods:        networkpbprpc.DataServiceMethods(),
		Policies:       networkpbprpc.DataServicePolicies(), // reads are retried if the backend is unavailable
		Logger:         slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}
}

// run runs the demo with the command-line arguments args until the duration elapses, ctx is
// done or SIGINT or SIGTERM arrives, and returns the exit status. Status lines and the summary
// go to stdout, logs and errors to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	stderr = &lockedWriter{w: stderr} // the reactors' loggers write from their own goroutines
	cfg, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "gameloop:", err)
		return 2
	}

	// The first signal stops the game gracefully, as ctx being done does.
	ctx, stopSignals := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stopSignals()

	var srv *server.Server
	if cfg.target == "" {
		srv, err = server.Start(ctx, server.Options{})
		if err != nil {
			newErrLog(stderr).fatal("starting the data service: %v", err)
			return 1
		}
		defer srv.Stop()
	}
	return play(ctx, stopSignals, &cfg, srv, stdout, stderr)
}

// play plays the game cfg describes against srv, the in-process backend, or against
// cfg.target when srv is nil, and returns the exit status. It stops playing when the duration
// has elapsed, when ctx is done or when srv stops serving. Once ctx is done, play calls
// stopSignals, which restores the default signal behaviour (a second Ctrl-C kills). The
// caller owns srv and stops it. stderr must be safe for concurrent writes.
func play(ctx context.Context, stopSignals func(), cfg *config, srv *server.Server, stdout, stderr io.Writer) int {
	logErr := newErrLog(stderr)
	target, backend := cfg.target, "external"
	if srv != nil {
		target, backend = srv.Addr(), "in-process data service, in-memory SQLite"
	}
	gm, err := newGame(cfg, target, logErr, stdout, stderr)
	if err != nil {
		logErr.fatal("creating the reactor: %v", err)
		return 1
	}

	// The main job's goroutines are supervised as one group: the game (the loop, then the
	// read-back), the watch on the in-process backend and the watch on signals. gctx is done
	// when ctx is or when the backend stops serving, and either makes the game stop playing.
	g, gctx := errgroup.WithContext(ctx)

	// The game stops when the duration has elapsed or gctx is done: OnTick then stops the loop
	// through loopCtx. The loop runs OnStop, in which every online player leaves with a final
	// save, and drains the reactor: it keeps ticking it until every save has settled, final
	// saves chained from the callbacks of autosaves still in flight included, and only then
	// closes it (see loop.Config.OnStop).
	loopCtx, stopLoop := context.WithCancel(context.WithoutCancel(ctx))
	defer stopLoop()
	if err := gm.newLoop(ctx, gctx, stopLoop, stderr); err != nil {
		_ = gm.r.Close(context.Background())
		logErr.fatal("creating the loop: %v", err)
		return 2
	}
	var metrics *metricsServer
	if cfg.metricsAddr != "" {
		metrics, err = startMetrics(cfg.metricsAddr, gm.r, gm.l, stderr)
		if err != nil {
			_ = gm.r.Close(context.Background())
			logErr.fatal("serving metrics: %v", err)
			return 1
		}
		defer metrics.stop() // once the game, read-back included, is over
	}

	fmt.Fprintf(stdout, "gameloop: %d players at %d TPS %s against %s (%s), seed %d\n",
		cfg.players, cfg.tps, durationText(cfg.duration), target, backend, cfg.seed)
	if metrics != nil {
		fmt.Fprintf(stdout, "gameloop: serving metrics at http://%s/metrics\n", metrics.addr)
		if cfg.onMetrics != nil {
			cfg.onMetrics(metrics.addr)
		}
	}

	over := make(chan struct{}) // closed when the game, read-back included, is over
	watchSignals(ctx, g, over, stopSignals)
	if srv != nil {
		watchBackend(g, srv, over)
	}
	// The game: the loop, then the read-back, on one goroutine (it reads the world unlocked).
	var s summary
	g.Go(func() error {
		defer close(over)
		s = gm.runAndVerify(ctx, loopCtx, srv, stderr)
		return nil
	})
	s.backendErr = g.Wait()

	s.print(stdout)
	if reasons := s.failures(); len(reasons) > 0 {
		fmt.Fprintf(stderr, "gameloop: FAILED: %s\n", strings.Join(reasons, "; "))
		return 1
	}
	return 0
}

// game is one play of the demo, on the loop goroutine: the world, the reactor its players
// call through, the loop that ticks both, and the reporter of its status lines.
type game struct {
	cfg        *config
	target     string
	w          *world
	r          *reactor.Reactor
	l          *loop.Loop
	rep        *reporter
	stopReason string // why the game stopped playing, once it has
}

// newGame creates the world of cfg and the reactor, talking to target, that its players call
// through; a callback that panics is counted and logged to logErr. Status lines go to stdout,
// the reactor's logs to stderr.
func newGame(cfg *config, target string, logErr *errLog, stdout, stderr io.Writer) (*game, error) {
	rcfg := cfg.reactorConfig(target, stderr)
	w := newWorld(cfg, logErr)
	rcfg.OnCallbackPanic = func(v any) { // on the loop goroutine, like every callback
		w.c.panics++
		logErr.printf("a promise callback panicked: %v", v)
	}
	r, err := reactor.New(rcfg)
	if err != nil {
		return nil, err
	}
	w.data = networkpbprpc.NewDataServiceClient(r)
	w.watchLeaderboard()
	return &game{cfg: cfg, target: target, w: w, r: r, rep: newReporter(stdout, cfg.tps)}, nil
}

// newLoop creates the loop that plays the game, tick by tick, and prints a status line every
// second. Once the duration has elapsed or gctx is done, it calls stopLoop, which ends the
// loop after that tick; the loop's OnStop then says why on stderr and makes every online
// player leave.
func (gm *game) newLoop(ctx, gctx context.Context, stopLoop func(), stderr io.Writer) error {
	onTick := func(n uint64) {
		now := gm.rep.tickAt(n)
		if gm.stopReason == "" && (gctx.Err() != nil || gm.cfg.duration > 0 && now.Sub(gm.rep.start) >= gm.cfg.duration) {
			gm.stopReason = stopReason(ctx, gctx)
			gm.rep.stopAt = now
			stopLoop() // Run finishes this tick, then runs OnStop.
		}
		gm.w.tick(n)
		if n > 0 && n%uint64(gm.cfg.tps) == 0 {
			gm.rep.status(now, gm.l.Stats(), gm.r.Stats(), gm.w.online)
		}
	}
	l, err := loop.New(loop.Config{
		TPS:             gm.cfg.tps,
		Budget:          gm.cfg.budget,
		Reactors:        []loop.Reactor{gm.r},
		OnTick:          onTick,
		ShutdownTimeout: gm.cfg.drainTimeout,
		OnStop: func() {
			fmt.Fprintf(stderr, "gameloop: stopping (%s): %d players leaving, waiting for their final saves\n", gm.stopReason, gm.w.online)
			gm.w.stopAll()
		},
	})
	gm.l = l
	return err
}

// stopReason says why the game stops playing: ctx is done (a signal, or the caller), gctx is
// done (its cause, the backend stopped serving), or neither, so the duration has elapsed.
func stopReason(ctx, gctx context.Context) string {
	switch {
	case ctx.Err() != nil:
		return "interrupted"
	case gctx.Err() != nil:
		return context.Cause(gctx).Error()
	}
	return "duration elapsed"
}

// runAndVerify runs the loop until it stops, then reads every player back through a reactor
// of its own, within verifyTimeout, and returns the summary of both but for backendErr: the
// loop, the calls, the world, the read-back, and srv's counts if srv is not nil. The
// read-back runs even when ctx is done: it keeps ctx's values, not its cancellation. The
// read-back reactor's logs go to stderr.
func (gm *game) runAndVerify(ctx, loopCtx context.Context, srv *server.Server, stderr io.Writer) summary {
	gm.rep.start = time.Now()
	runErr := gm.l.Run(loopCtx)
	s := summary{
		cfg:    gm.cfg,
		target: gm.target,
		start:  gm.rep.start,
		stopAt: gm.rep.stopAt,
		end:    time.Now(),
		first:  gm.rep.first,
		last:   gm.rep.last,
		played: gm.rep.played,
		loop:   gm.l.Stats(),
		calls:  gm.r.Stats(),
		world:  gm.w.c,
		board:  gm.w.board,
		online: gm.w.online,
		runErr: runErr,
	}
	if srv != nil {
		st := srv.Stats()
		s.backend = &st
	}
	vctx, vcancel := context.WithTimeout(context.WithoutCancel(ctx), verifyTimeout)
	defer vcancel()
	s.verify = verify(vctx, gm.cfg.reactorConfig(gm.target, stderr), gm.cfg.budget, gm.w)
	return s
}

// watchSignals watches, in g, for ctx to be done, the first signal: it then calls stopSignals,
// which restores the default behaviour, so that a second signal kills. It ends when the game
// is over.
func watchSignals(ctx context.Context, g *errgroup.Group, over <-chan struct{}, stopSignals func()) {
	g.Go(func() error {
		select {
		case <-ctx.Done():
			stopSignals()
		case <-over:
		}
		return nil
	})
}

// watchBackend watches, in g, the in-process backend srv: if it stops serving during the
// game, the watch fails, which cancels g's context and so stops the game. It ends when the
// game is over.
func watchBackend(g *errgroup.Group, srv *server.Server, over <-chan struct{}) {
	g.Go(func() error {
		select {
		case <-srv.Done():
			return backendStopped(srv.Err())
		case <-over:
			return nil
		}
	})
}

// backendStopped is the error of an in-process backend that stopped serving during the game,
// with err, the reason it gave, if any.
func backendStopped(err error) error {
	if err == nil {
		return errors.New("the in-process data service stopped serving")
	}
	return fmt.Errorf("the in-process data service stopped serving: %w", err)
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// durationText describes the -duration flag.
func durationText(d time.Duration) string {
	if d == 0 {
		return "until Ctrl-C"
	}
	return "for " + d.String()
}
