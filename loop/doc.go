// Package loop is a tick driver for hosts that have no game loop of their own: it runs the
// host's game logic at a fixed rate and delivers prpc replies on the same goroutine.
//
// A Loop calls Config.OnTick, then Tick(Budget) on each reactor, once per tick, at
// Config.TPS ticks per second. Between ticks it waits on the reactors' Ready channels and
// drains a reactor as soon as it signals, so a reply does not wait up to a whole tick for its
// callback (Config.TickOnly turns that off); such a drain never runs into the next tick's
// time. A tick that runs late never causes a burst of catch-up ticks: the ticks whose time
// has passed are skipped and counted, as Minecraft servers do. When the context is done, the
// Loop runs Config.OnStop, drains the reactors — it keeps ticking them until nothing is
// pending, so the last calls and any calls their callbacks chain are served, within
// Config.ShutdownTimeout — then closes them and returns.
//
// Everything the Loop runs, OnTick, OnStop, and the reactors' Tick and Close, runs on the
// goroutine that calls Run, so game state needs no locks:
//
//	r, err := reactor.New(reactor.Config{Target: "127.0.0.1:50051", Credentials: reactor.Insecure()})
//	if err != nil {
//		return err
//	}
//	l, err := loop.New(loop.Config{
//		TPS:      20,
//		Reactors: []loop.Reactor{r},
//		OnTick: func(tick uint64) {
//			world.Update(tick) // may call reactor.Call; callbacks run here too
//		},
//		OnStop: func() {
//			world.SaveAll() // last calls: the Loop ticks r until they and their chains are done
//		},
//	})
//	if err != nil {
//		return err
//	}
//	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
//	defer stop()
//	return l.Run(ctx) // returns after OnStop, the drain and r.Close
//
// Stats reports tick counts, skipped and overrun ticks, the measured rate and tick-duration
// percentiles, from any goroutine.
package loop
