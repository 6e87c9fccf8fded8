// Package otelprpc exports the metrics of prpc's reactors and loops to OpenTelemetry: call
// counts by method and outcome, latency histograms split by phase, the reactor's load and the
// loop's tick times, under names that begin with "prpc.".
//
// A Producer reads each reactor's Stats, and each loop's Stats and TickDurations, when a
// reader collects, and turns them into OpenTelemetry data: nothing is added to a call's path,
// and nothing runs between collections. Register it on the reader with sdkmetric.WithProducer,
// and add the reactors and loops it reads:
//
//	p := otelprpc.NewProducer(otelprpc.WithReactor(r), otelprpc.WithLoop(l))
//	exp, err := otlpmetricgrpc.New(ctx) // any exporter
//	if err != nil {
//		return err
//	}
//	mp := sdkmetric.NewMeterProvider(
//		sdkmetric.WithReader(sdkmetric.NewPeriodicReader(exp, sdkmetric.WithProducer(p))),
//	)
//	defer mp.Shutdown(context.Background())
//
// A Producer may be registered on several readers; each collection reads every reactor once.
//
// # Why a Producer
//
// The reactor keeps its latency histograms itself, cumulative in fixed buckets (gRFC A66's,
// from 0 to 100 s), and its counters too; OpenTelemetry's metric API has asynchronous
// counters and gauges but no asynchronous histogram, so histograms kept elsewhere reach a
// pipeline only through the SDK's metric.Producer, as the Prometheus and OpenCensus bridges'
// do. A Producer therefore bypasses the MeterProvider's views: its metrics keep the names,
// buckets and attributes below.
//
// # What it exports
//
// Every metric is cumulative from the time its reactor or loop was added (see
// Producer.AddReactor): histograms as metricdata.Histogram[float64] with the reactor's bucket
// bounds, counters as monotonic cumulative metricdata.Sum[int64], gauges as metricdata.Gauge.
// Durations are in seconds. The metrics of a reactor's methods carry rpc.system ("grpc"),
// rpc.service (the full service name) and rpc.method (the method name), as OpenTelemetry's RPC
// conventions name them:
//
//	prpc.call.duration     histogram  s          the whole call, submission to callback
//	prpc.call.queue_wait   histogram  s          submission until a lane took the call
//	prpc.call.transport    histogram  s          the transport call
//	prpc.call.tick_wait    histogram  s          the outcome's wait for Tick
//	prpc.call.submitted    counter    {call}     calls submitted, rejected ones included
//	prpc.call.completed    counter    {call}     calls delivered or rejected, by rpc.grpc.status_code
//	prpc.call.timed_out    counter    {call}     failures with calls.ErrTimeout
//	prpc.call.overloaded   counter    {call}     rejections with calls.ErrOverloaded
//	prpc.call.cancelled    counter    {call}     failures with calls.ErrCancelled
//	prpc.call.closed       counter    {call}     failures with calls.ErrClosed
//	prpc.call.shed         counter    {call}     calls a lane did not send (calls.ErrShed)
//	prpc.call.never_sent   counter    {call}     failed calls that never reached gRPC
//	prpc.call.coalesced    counter    {call}     calls that joined another's transport call
//	prpc.hedge.sent        counter    {attempt}  hedged attempts sent after the first
//	prpc.hedge.won         counter    {call}     calls a hedge's response settled
//	prpc.hedge.lost        counter    {attempt}  attempts cancelled because another decided first
//
// A stream method's (reactor.Watch, reactor.Bidi), with the same attributes, from
// reactor.MethodStats.Streams; a stream method has none of the calls' metrics above:
//
//	prpc.streams.open             gauge    {stream}   streams whose end is not delivered yet
//	prpc.stream.messages          counter  {message}  messages by outcome: received, delivered, replaced, discarded
//	prpc.stream.messages_waiting  gauge    {message}  messages received and waiting for Tick
//	prpc.stream.stalls            counter  {stall}    times a receiver stopped reading, its ring full
//	prpc.stream.reopens           counter  {stream}   reopenings by resubscription
//	prpc.stream.ends              counter  {stream}   ends delivered, by rpc.grpc.status_code
//
// The attribute outcome is named as the Prometheus adapter's label is, so that a dashboard
// works with either.
//
// The reactor's gauges have no attribute of their own: prpc.calls.pending,
// prpc.calls.max_outstanding, prpc.calls.queued, prpc.calls.in_flight and
// prpc.calls.in_flight_limit ({call}), and prpc.delivery.oldest_wait (s). A loop's metrics
// are prpc.loop.tick.duration (histogram, s), and the counters prpc.loop.ticks,
// prpc.loop.overruns and prpc.loop.skipped ({tick}) and prpc.loop.delivered ({call}).
// WithBackends adds prpc.backend.calls, prpc.backend.failed (by rpc.grpc.status_code) and
// prpc.backend.hedges_lost, by server.address.
//
// A reactor or loop added with a name carries it on each of its metrics, as the attribute
// prpc.reactor or prpc.loop. No attribute is per call or per player: a reactor's series are
// bounded by its methods, the status codes they return and, with WithBackends, its backends.
//
// The instrumentation scope is named ScopeName, with this module's version as the go command
// recorded it in the program ("(devel)" for a module built from a working tree or replaced by
// a directory).
package otelprpc
