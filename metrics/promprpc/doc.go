// Package promprpc exports the metrics of prpc's reactors and loops to Prometheus, through
// client_golang: a Collector that reads reactor.Reactor.Stats, loop.Loop.Stats and
// loop.Loop.TickDurations at each scrape, as client_golang's collectors.NewDBStatsCollector
// reads sql.DB.Stats. Nothing is added to a call's path: with no scrape, the Collector does
// nothing at all.
//
// Register it and serve the registry:
//
//	r, err := reactor.New(cfg)
//	…
//	l, err := loop.New(loop.Config{Reactors: []loop.Reactor{r}, …})
//	…
//	prometheus.MustRegister(promprpc.NewCollector(promprpc.WithReactor(r), promprpc.WithLoop(l)))
//	http.Handle("/metrics", promhttp.Handler())
//
// A program with several reactors names each (WithNamedReactor), and every reactor's metric
// then has a prpc_reactor label. WithBackends adds the counts by backend address.
//
// # Metrics
//
// The names, labels and meanings are those of the repository's docs/metrics.md, shared with
// the OpenTelemetry adapter (otelprpc), so that a dashboard works with either. Per method,
// labelled rpc_system="grpc", rpc_service (the full service name) and rpc_method:
//
//	prpc_call_duration_seconds       histogram  submission to delivery by Tick (Histograms.Latency)
//	prpc_call_queue_wait_seconds     histogram  the wait for a lane (Histograms.QueueWait)
//	prpc_call_transport_seconds      histogram  the transport call (Histograms.Transport)
//	prpc_call_tick_wait_seconds      histogram  the wait for Tick (Histograms.TickWait)
//	prpc_call_submitted_total        counter    calls submitted, rejected ones included
//	prpc_call_completed_total        counter    calls settled and delivered (or rejected), by rpc_grpc_status_code
//	prpc_call_timed_out_total        counter    failures with calls.ErrTimeout
//	prpc_call_overloaded_total       counter    rejections with calls.ErrOverloaded
//	prpc_call_cancelled_total        counter    failures with calls.ErrCancelled
//	prpc_call_closed_total           counter    failures with calls.ErrClosed
//	prpc_call_shed_total             counter    calls a lane did not send (calls.ErrShed)
//	prpc_call_never_sent_total       counter    failed calls that never reached gRPC
//	prpc_call_coalesced_total        counter    calls that joined another's transport call
//	prpc_hedge_sent_total            counter    attempts sent after a call's first
//	prpc_hedge_won_total             counter    calls a hedge's response settled
//	prpc_hedge_lost_total            counter    attempts cancelled because another decided first
//
// Per stream method (reactor.Watch, reactor.Bidi), with the same labels, from
// MethodStats.Streams; a stream method has none of the calls' series above:
//
//	prpc_streams_open              gauge    streams whose end is not delivered yet (Open)
//	prpc_stream_messages_total     counter  messages by outcome: received, delivered, replaced, discarded
//	prpc_stream_messages_waiting   gauge    messages received and waiting for Tick (Waiting)
//	prpc_stream_stalls_total       counter  times a receiver stopped reading, its ring full (Stalls)
//	prpc_stream_reopens_total      counter  reopenings by resubscription (Reopened)
//	prpc_stream_ends_total         counter  ends delivered, by rpc_grpc_status_code (Ended)
//
// Per reactor:
//
//	prpc_calls_pending                 gauge  calls admitted and not yet delivered (Stats.Pending)
//	prpc_calls_max_outstanding         gauge  the bound on prpc_calls_pending
//	prpc_calls_queued                  gauge  calls waiting for a lane
//	prpc_calls_in_flight               gauge  calls lanes have taken, outcome not yet queued for Tick
//	prpc_calls_in_flight_limit         gauge  the adaptive limit on in-flight calls
//	prpc_delivery_oldest_wait_seconds  gauge  the age of the oldest outcome waiting for Tick
//
// Per loop (no labels):
//
//	prpc_loop_tick_duration_seconds  histogram  every tick's duration (Loop.TickDurations)
//	prpc_loop_ticks_total            counter    ticks run
//	prpc_loop_overruns_total         counter    ticks that ended after the next one was due
//	prpc_loop_skipped_total          counter    due times passed over
//	prpc_loop_delivered_total        counter    calls delivered by the loop's Ticks
//
// With WithBackends, per backend address (label server_address): prpc_backend_calls_total,
// prpc_backend_failed_total (by rpc_grpc_status_code) and prpc_backend_hedges_lost_total, from
// reactor.Stats.Backends.
//
// The histograms' buckets are the reactor's (gRPC's latency buckets, gRFC A66), in seconds,
// with le="+Inf" equal to the count. Labels are bounded: the method, the status code, the
// reactor's name and the backend's address; never anything per call.
//
// # Cost
//
// A scrape calls Stats once per reactor and Stats and TickDurations once per loop, on the
// scraping goroutine; what those cost the reactor and the loop is in their documentation (a
// copy of the counters under the mutex they are kept under). The Collector then builds the
// metrics from those copies, holding no lock of prpc's: BenchmarkCollect measures it.
package promprpc
