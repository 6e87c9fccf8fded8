// Command pushhost shows how to use prpc from a host that brings its own executor, such as
// Dragonfly's world with its transactions, instead of a game loop that calls Tick itself.
//
// The host here is a tiny World: one goroutine owns all world state, Do(func(*Tx)) queues a
// function to run on that goroutine with a transaction (a *Tx) that gives access to the state,
// and a ticker runs the game logic on the same goroutine 20 times a second. Nothing else may
// touch the state, so it needs no locks.
//
// The pattern has three parts:
//
//   - Deliver through the host's executor. The reactor's Config.OnReady hook schedules one
//     Tick on the world:
//
//     OnReady: func() { w.Do(func(tx *Tx) { r.Tick(budget) }) }
//
//     The reactor calls OnReady at most once until a Tick drains the completions waiting, and
//     never on the goroutine that calls Tick, so a burst of replies costs one Do, not one per
//     reply; the host must not add scheduling of its own per completion. Every callback then
//     runs inside a world transaction. At the end the program prints how many Ticks OnReady
//     scheduled next to how many callbacks ran: never more Ticks than completions, and the
//     busier the world, the more completions share a Tick.
//
//   - Capture entity handles, not entities. A callback runs ticks after its call was made; the
//     entity may have despawned meanwhile. Callbacks capture the entity's Handle and look the
//     entity up again in the transaction they run in, and do nothing when it is gone. Every
//     tenth player (-leave-every) shows this: it leaves while logging in, before its GetPlayer
//     reply arrives, and the callback finds no entity.
//
//   - Shut down on the executor. Reactor.Shutdown must run where Tick runs; it serves the last
//     calls and those their callbacks chain, and delivers their callbacks, which need a
//     transaction. The program shuts the reactor down inside a final w.Do, waits for it, and
//     only then stops the world.
//
// Each of -players players joins (50 per world tick), loads its profile with GetPlayer, plays
// two ticks, saves with SavePlayer and leaves. Every call is made from the world goroutine.
// Without -target the program starts the example DataService in-process, on a private
// in-memory database.
//
// Usage:
//
//	go run ./examples/pushhost [flags]
//
// The flags are:
//
//	-players n
//		Number of players (default 200).
//	-duration d
//		Longest time to run before closing (default 3s); the program stops earlier once every
//		player has finished.
//	-target host:port
//		A running DataService to call over plaintext gRPC, instead of an in-process one.
//	-leave-every n
//		Every n-th player leaves before its GetPlayer reply arrives (default 10; 0 for none).
//	-tps n
//		World ticks per second (default 20).
//	-budget d
//		Time budget of each Tick (default 2ms).
//	-tick-cost d
//		How long each world tick keeps the world goroutine busy, standing in for a real
//		game's tick (default 10ms). Replies that arrive meanwhile share one Tick; with 0
//		the world is idle and most replies get a Tick of their own.
//
// It prints a summary to stdout and exits with status 0 if every player finished and every
// call succeeded, 1 otherwise, and 2 for bad flags.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/server"
	"github.com/trixnew/prpc/reactor"
)

const (
	spawnPerTick = 50 // players that join per world tick
	playTicks    = 2  // world ticks a loaded player plays before it saves
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run parses args, plays the game and prints its summary to stdout; errors and logs go to
// stderr. It returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("pushhost", flag.ContinueOnError)
	fs.SetOutput(stderr)
	players := fs.Int("players", 200, "number of `players`")
	duration := fs.Duration("duration", 3*time.Second, "longest `time` to run before closing")
	target := fs.String("target", "", "DataService `address` (plaintext gRPC); empty starts one in-process")
	leaveEvery := fs.Int("leave-every", 10, "every `n`-th player leaves before its GetPlayer reply arrives; 0 for none")
	tps := fs.Int("tps", 20, "world `ticks` per second")
	budget := fs.Duration("budget", 2*time.Millisecond, "time `budget` of each Tick")
	tickCost := fs.Duration("tick-cost", 10*time.Millisecond, "`time` each world tick keeps the world busy, standing in for real game logic")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var bad error
	switch {
	case fs.NArg() > 0:
		bad = fmt.Errorf("unexpected arguments: %q", fs.Args())
	case *players < 1:
		bad = fmt.Errorf("-players must be at least 1, got %d", *players)
	case *duration <= 0:
		bad = fmt.Errorf("-duration must be positive, got %v", *duration)
	case *leaveEvery < 0:
		bad = fmt.Errorf("-leave-every must not be negative, got %d", *leaveEvery)
	case *tps < 1 || *tps > 1000:
		bad = fmt.Errorf("-tps must be from 1 to 1000, got %d", *tps)
	case *budget < 0:
		bad = fmt.Errorf("-budget must not be negative, got %v", *budget)
	case *tickCost < 0:
		bad = fmt.Errorf("-tick-cost must not be negative, got %v", *tickCost)
	}
	if bad != nil {
		fmt.Fprintln(stderr, "pushhost:", bad)
		fs.Usage()
		return 2
	}

	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	addr := *target
	if addr == "" {
		srv, err := server.Start(ctx, server.Options{Logger: logger})
		if err != nil {
			fmt.Fprintln(stderr, "pushhost: starting the data service:", err)
			return 1
		}
		defer srv.Stop()
		addr = srv.Addr()
	}

	res, err := play(ctx, reactor.Config{
		Target:      addr,
		Credentials: reactor.Insecure(),
		Logger:      logger,
	}, gameConfig{
		Players:      *players,
		SpawnPerTick: spawnPerTick,
		LeaveEvery:   *leaveEvery,
		PlayTicks:    playTicks,
		TPS:          *tps,
		Budget:       *budget,
		TickCost:     *tickCost,
	}, *duration)
	if err != nil {
		fmt.Fprintln(stderr, "pushhost:", err)
		return 1
	}
	printSummary(stdout, addr, *target == "", res)
	if !res.ok() {
		return 1
	}
	return 0
}

func printSummary(w io.Writer, addr string, inProcess bool, res *result) {
	where := "the data service"
	if inProcess {
		where = "the in-process data service"
	}
	perTick := 0.0
	if res.TickRuns > 0 {
		perTick = float64(res.TickDelivered) / float64(res.TickRuns)
	}
	fmt.Fprintf(w, "pushhost: %d players against %s at %s; %d world ticks at %d TPS, %v\n",
		res.Players, where, addr, res.WorldTicks, res.TPS, res.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(w, "  %d calls, %d callbacks, %d Tick runs scheduled by OnReady (%.1f callbacks per Tick; %d idle; %d callbacks run by Shutdown)\n",
		res.Calls, res.Callbacks, res.Scheduled, perTick, res.IdleTicks, res.CloseDelivered)
	fmt.Fprintf(w, "  GetPlayer: %d loaded, %d failed; SavePlayer: %d saved, %d failed\n",
		res.Loaded, res.GetFailed, res.Saved, res.SaveFailed)
	fmt.Fprintf(w, "  %d players left before their GetPlayer reply; %d callbacks found no entity and did nothing\n",
		res.LeftEarly, res.Gone)
	fmt.Fprintf(w, "  callbacks outside the world goroutine: %d; Ticks outside it: %d; callback panics: %d\n",
		res.OutsideWorld, res.TicksOutside, res.Panics)
	for _, e := range res.Errors {
		fmt.Fprintln(w, "  error:", e)
	}
	switch {
	case res.ok():
		fmt.Fprintf(w, "  ok: %d of %d players finished, every call succeeded\n", res.Finished, res.Players)
	case res.TimedOut:
		fmt.Fprintf(w, "  FAILED: stopped with %d of %d players finished; close: %v\n", res.Finished, res.Players, res.CloseErr)
	default:
		fmt.Fprintf(w, "  FAILED: %d of %d players finished, %d of %d calls succeeded; close: %v\n",
			res.Finished, res.Players, res.Succeeded, res.Calls, res.CloseErr)
	}
}
