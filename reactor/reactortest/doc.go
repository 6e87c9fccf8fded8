// Package reactortest helps users test game logic that makes prpc calls, without a network,
// in the spirit of net/http/httptest.
//
// A Backend is an in-memory gRPC backend: register a Go func per method with Handle (unary),
// HandleStream (server-streaming) or HandleBidi (bidirectional and client-streaming), each
// given the method's descriptor, or a fake of the server with the function
// protoc-gen-go-grpc generates (pb.RegisterXServer(b, fake)), as on a grpc.Server, and pass the Backend as reactor.Config.Conn (NewReactor does,
// and closes the reactor when the test ends). A Backend serves unary and streaming methods,
// without server interceptors. Calls and streams go through the same codec, limits and
// reactor machinery as on a network; each direction of a stream holds a window of messages,
// as HTTP/2 flow control does, so that a handler's send waits while the client does not read
// (Stalls and WaitStalls observe it). Flush and Drain tick a reactor until every call has been delivered and every
// callback has run, so a test can assert on what the callbacks did. Handlers set response
// metadata with grpc-go's own grpc.SetHeader, grpc.SendHeader and grpc.SetTrailer, as on a
// gRPC server.
//
// The Config production runs with works with a Backend: idempotent policies are honoured,
// with retries as gRPC makes them except that they do not wait out the backoff, and the
// settings of the transport (Credentials, DialOptions, Keepalive, …) are ignored; NewReactor
// clears Target and Targets, and turns on Config.CheckRequestOwnership, so that a request
// modified while its call owns it fails the test. Backend's documentation has the details.
//
// A ManualClock is a reactor.Clock whose time moves only when the test says so: passed as
// Config.Clock, it makes call deadlines and Tick budgets deterministic, with no real time
// passing; a Backend handler's context, a stream handler's too, ends at its deadline on that
// clock, as on a server,
// while its Deadline method, for the gRPC clients, dialers and drivers a handler passes the
// context to, is on the system clock: the time the call has left when the handler starts.
// WaitTimerBy lets a test wait, without polling, until the reactor has set its one timer for
// a deadline, or for a hedge, before it advances the clock past it.
package reactortest
