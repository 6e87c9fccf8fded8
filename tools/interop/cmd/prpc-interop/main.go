// Command prpc-interop runs the unary and streaming cases of the gRPC interop suite through
// prpc (reactor.Call, reactor.Watch and reactor.Bidi, with the host ticking the reactor as a
// game loop would) against grpc-go's interop server, over plaintext and over TLS, or against
// the same TestService served by connect-go, and prints one line per case:
//
//	PASS empty_unary (plaintext)
//	FAIL large_unary (tls): …
//
// It exits with status 1 if any case fails. The cases are those of the interop test
// descriptions (https://github.com/grpc/grpc/blob/master/doc/interop-test-descriptions.md)
// that a unary client can run: empty_unary, large_unary, custom_metadata,
// status_code_and_message, special_status_message, unimplemented_method and
// unimplemented_service, plus timeout_1ms, a unary variant of timeout_on_sleeping_server (see
// runTimeout1ms), and error_metadata, custom_metadata on a call that fails; the streaming
// cases server_streaming, client_streaming (opened with reactor.Bidi, as prpc opens
// client-streaming methods), ping_pong and empty_stream, whose messages and ends are
// delivered in Tick; and the full-duplex halves of custom_metadata and
// status_code_and_message (custom_metadata_stream, status_code_and_message_stream).
//
// By default it serves grpc-go's interop TestService in process, twice on 127.0.0.1:0: once
// in plaintext and once with TLS, using grpc-go's interop certificates (testdata server1.pem,
// signed by ca.pem, for *.test.google.fr; the client overrides the server name with
// foo.test.google.fr, as grpc-go's interop client does). The service is the one
// google.golang.org/grpc/interop/server registers, interop.NewTestServer. With -server_binary
// it runs that server program instead, built from the module:
//
//	go build -o /tmp/interop-server google.golang.org/grpc/interop/server
//	go run ./cmd/prpc-interop -server_binary /tmp/interop-server
//
// With -peer connect it serves the TestService with connect-go instead (see startConnect), in
// process, plaintext over HTTP/2 cleartext, and adds status_details, a status whose details
// connect-go fills and grpc-go's TestService cannot, and unimplemented_stream, a stream of a
// method connect-go's mux does not route:
//
//	go run ./cmd/prpc-interop -peer connect
//
// With -addr it runs the cases once against an interop server that is already running, of any
// language (-tls, -ca and -server_host_override as for grpc's interop client).
//
// This is a separate Go module because grpc-go's interop packages pull in a large dependency
// tree (xDS, ORCA, OAuth2, …), and connect-go is a peer only: prpc itself must depend on
// neither. go test ./... at the repository root does not enter it; .ci/run runs it
// explicitly, and its tests (go test ./tools/interop/...) run the cases against both peers in
// process:
//
//	cd tools/interop && go run ./cmd/prpc-interop && go run ./cmd/prpc-interop -peer connect
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/interop"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/orca"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/testdata"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
)

// Methods of the interop services.
var (
	emptyCall             = calls.MustMethod[*testpb.Empty, *testpb.Empty]("/grpc.testing.TestService/EmptyCall")
	unaryCall             = calls.MustMethod[*testpb.SimpleRequest, *testpb.SimpleResponse]("/grpc.testing.TestService/UnaryCall")
	unimplementedCall     = calls.MustMethod[*testpb.Empty, *testpb.Empty]("/grpc.testing.TestService/UnimplementedCall")
	unimplementedSvcCall  = calls.MustMethod[*testpb.Empty, *testpb.Empty]("/grpc.testing.UnimplementedService/UnimplementedCall")
	defaultServerOverride = "foo.test.google.fr" // a name server1.pem carries (*.test.google.fr)
)

// Sizes, keys and values from the interop test descriptions.
const (
	largeRequestSize      = 271828
	largeResponseSize     = 314159
	initialMetadataKey    = "x-grpc-test-echo-initial"
	initialMetadataValue  = "test_initial_metadata_value"
	trailingMetadataKey   = "x-grpc-test-echo-trailing-bin"
	trailingMetadataValue = "\x0a\x0b\x0a\x0b\x0a\x0b"
	statusMessage         = "test status message"
	specialStatusMessage  = "\t\ntest with whitespace\r\nand Unicode BMP ☺ and non-BMP 😈\t\n"
)

// Timeouts. callTimeout bounds every case but timeout_1ms; waitBound bounds how long the host
// waits for any one call to settle (every call has a deadline, so it settles by then).
const (
	callTimeout = 10 * time.Second
	waitBound   = 30 * time.Second
	tickBudget  = 2 * time.Millisecond
)

// sleepyResponseSize is the response timeout_1ms asks for: 32 MiB.
const sleepyResponseSize = 32 << 20

func main() {
	addr := flag.String("addr", "", "host:port of a running interop server; empty: start grpc-go's interop server (in process, or -server_binary), plaintext and TLS")
	useTLS := flag.Bool("tls", false, "with -addr: connect with TLS")
	caFile := flag.String("ca", testdata.Path("ca.pem"), "with -addr and -tls: PEM file of the CA that signed the server's certificate")
	override := flag.String("server_host_override", defaultServerOverride, "with TLS: the name the server's certificate must carry")
	serverBinary := flag.String("server_binary", "", "path of grpc-go's interop server program (go build google.golang.org/grpc/interop/server) to run instead of the in-process server")
	peer := flag.String("peer", peerGRPC, "the server: "+peerGRPC+" (grpc-go's interop TestService) or "+peerConnect+" (the TestService on connect-go, in process, plaintext over HTTP/2 cleartext; not with -addr or -server_binary)")
	flag.Parse()

	cases := grpcCases
	switch *peer {
	case peerGRPC:
	case peerConnect:
		if *addr != "" || *serverBinary != "" {
			fmt.Fprintln(os.Stderr, "prpc-interop: -peer "+peerConnect+" serves in process; it takes neither -addr nor -server_binary")
			os.Exit(2)
		}
		cases = connectCases
	default:
		fmt.Fprintf(os.Stderr, "prpc-interop: -peer %q: want %s or %s\n", *peer, peerGRPC, peerConnect)
		os.Exit(2)
	}

	failed := false
	run := func(mode, target string, creds reactor.Credentials) {
		if !runCases(mode, target, creds, cases) {
			failed = true
		}
	}
	tlsCreds := reactor.TLSFiles(*caFile, *override)
	switch {
	case *peer == peerConnect:
		fmt.Println("prpc-interop: connect-go server in process (HTTP/2 cleartext)")
		target, stop, err := startConnect()
		if err != nil {
			fmt.Printf("FAIL start connect-go server: %v\n", err)
			os.Exit(1)
		}
		run("connect, plaintext", target, reactor.Insecure())
		stop()
	case *addr != "":
		mode, creds := "plaintext", reactor.Insecure()
		if *useTLS {
			mode, creds = "tls", tlsCreds
		}
		fmt.Printf("prpc-interop: server %s (%s)\n", *addr, mode)
		run(mode, *addr, creds)
	case *serverBinary != "":
		fmt.Printf("prpc-interop: server program %s\n", *serverBinary)
		for _, tls := range []bool{false, true} {
			mode, creds := "plaintext", reactor.Insecure()
			if tls {
				mode, creds = "tls", tlsCreds
			}
			target, stop, err := startBinary(*serverBinary, tls)
			if err != nil {
				fmt.Printf("FAIL start %s (%s): %v\n", *serverBinary, mode, err)
				failed = true
				continue
			}
			run(mode, target, creds)
			stop()
		}
	default:
		fmt.Println("prpc-interop: server in process (interop.NewTestServer)")
		plain, stopPlain, err := startInProcess(nil)
		if err != nil {
			fmt.Printf("FAIL start server (plaintext): %v\n", err)
			os.Exit(1)
		}
		defer stopPlain()
		run("plaintext", plain, reactor.Insecure())

		serverCreds, err := credentials.NewServerTLSFromFile(testdata.Path("server1.pem"), testdata.Path("server1.key"))
		if err != nil {
			fmt.Printf("FAIL server TLS credentials: %v\n", err)
			os.Exit(1)
		}
		secure, stopSecure, err := startInProcess(serverCreds)
		if err != nil {
			fmt.Printf("FAIL start server (tls): %v\n", err)
			os.Exit(1)
		}
		defer stopSecure()
		run("tls", secure, tlsCreds)
	}
	if failed {
		fmt.Println("prpc-interop: FAILED")
		os.Exit(1)
	}
	fmt.Println("prpc-interop: all cases passed")
}

// startInProcess serves grpc-go's interop TestService on 127.0.0.1:0 as
// google.golang.org/grpc/interop/server does (with ORCA per-call metrics), with creds if not
// nil, and returns its address and a function that stops it.
func startInProcess(creds credentials.TransportCredentials) (string, func(), error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	opts := []grpc.ServerOption{orca.CallMetricsServerOption(nil)}
	if creds != nil {
		opts = append(opts, grpc.Creds(creds))
	}
	srv := grpc.NewServer(opts...)
	testpb.RegisterTestServiceServer(srv, interop.NewTestServer(interop.NewTestServerOptions{MetricsRecorder: orca.NewServerMetricsRecorder()}))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(lis)
	}()
	return lis.Addr().String(), func() { srv.Stop(); <-done }, nil
}

// startBinary runs grpc-go's interop server program on a free port (plaintext, or TLS with
// its default certificates) and waits until it accepts connections. The port is found by
// listening on 127.0.0.1:0 and closing the listener, since the program takes a port number.
func startBinary(path string, useTLS bool) (string, func(), error) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	port := lis.Addr().(*net.TCPAddr).Port
	lis.Close()
	var out bytes.Buffer
	cmd := exec.Command(path, "-port", strconv.Itoa(port), "-use_tls="+strconv.FormatBool(useTLS))
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	for deadline := time.Now().Add(10 * time.Second); ; {
		conn, err := net.DialTimeout("tcp", target, time.Second)
		if err == nil {
			conn.Close()
			return target, stop, nil
		}
		select {
		case err := <-exited:
			return "", nil, fmt.Errorf("server exited: %v\n%s", err, out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return "", nil, fmt.Errorf("server not accepting on %s after 10 s: %v\n%s", target, err, out.String())
		}
	}
}

// interopCase is one case: its name, as the interop test descriptions spell it where they
// name it, and a function that runs it through r and says what went wrong.
type interopCase struct {
	name string
	run  func(r *reactor.Reactor) error
}

// grpcCases are the cases run against grpc-go's interop server.
var grpcCases = []interopCase{
	{"empty_unary", runEmptyUnary},
	{"large_unary", runLargeUnary},
	{"custom_metadata", runCustomMetadata},
	{"custom_metadata_stream", runCustomMetadataStream},
	{"error_metadata", runErrorMetadata},
	{"status_code_and_message", runStatusCodeAndMessage},
	{"status_code_and_message_stream", runStatusCodeAndMessageStream},
	{"special_status_message", runSpecialStatusMessage},
	{"unimplemented_method", runUnimplementedMethod},
	{"unimplemented_service", runUnimplementedService},
	{"timeout_1ms", runTimeout1ms},
	{"server_streaming", runServerStreaming},
	{"client_streaming", runClientStreaming},
	{"ping_pong", runPingPong},
	{"empty_stream", runEmptyStream},
}

// newReactor returns a reactor dialled to target for the cases, with their timeouts and
// limits.
func newReactor(target string, creds reactor.Credentials) (*reactor.Reactor, error) {
	return reactor.New(reactor.Config{
		Target:         target,
		Credentials:    creds,
		DefaultTimeout: callTimeout,
		MaxTimeout:     callTimeout,
		// timeout_1ms asks for a 32 MiB response; above the 4 MiB default it would fail
		// with ResourceExhausted, not with its deadline.
		Limits: limits.Limits{MaxResponseBytes: 2 * sleepyResponseSize},
	})
}

// runCases runs cases in order through one reactor dialled to target, prints a line for
// each, closes the reactor and reports whether all passed.
func runCases(mode, target string, creds reactor.Credentials, cases []interopCase) bool {
	r, err := newReactor(target, creds)
	if err != nil {
		fmt.Printf("FAIL reactor.New (%s): %v\n", mode, err)
		return false
	}
	ok := true
	for _, c := range cases {
		if err := c.run(r); err != nil {
			fmt.Printf("FAIL %s (%s): %v\n", c.name, mode, err)
			ok = false
			continue
		}
		fmt.Printf("PASS %s (%s)\n", c.name, mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := r.Close(ctx); err != nil {
		fmt.Printf("FAIL close (%s): %v\n", mode, err)
		ok = false
	}
	return ok
}

// await ticks r the way a game loop does between frames, woken by Ready, until p's outcome
// is delivered, and returns it.
func await[Resp proto.Message](r *reactor.Reactor, p *calls.Promise[Resp]) (Resp, error) {
	var resp Resp
	var err error
	done := false
	p.Then(func(v Resp) { resp = v }).OnError(func(e error) { err = e }).Always(func() { done = true })
	bound := time.NewTimer(waitBound)
	defer bound.Stop()
	for !done {
		select {
		case <-r.Ready():
			r.Tick(tickBudget)
		case <-bound.C:
			var zero Resp
			return zero, fmt.Errorf("call not settled after %v", waitBound)
		}
	}
	return resp, err
}

func runEmptyUnary(r *reactor.Reactor) error {
	resp, err := await(r, reactor.Call(r, emptyCall, &testpb.Empty{}, nil))
	if err != nil {
		return err
	}
	if !proto.Equal(resp, &testpb.Empty{}) {
		return fmt.Errorf("response %v, want an empty message", resp)
	}
	return nil
}

func runLargeUnary(r *reactor.Reactor) error {
	req := &testpb.SimpleRequest{
		ResponseType: testpb.PayloadType_COMPRESSABLE,
		ResponseSize: largeResponseSize,
		Payload:      &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, largeRequestSize)},
	}
	resp, err := await(r, reactor.Call(r, unaryCall, req, nil))
	if err != nil {
		return err
	}
	body := resp.GetPayload().GetBody()
	if t := resp.GetPayload().GetType(); t != testpb.PayloadType_COMPRESSABLE || len(body) != largeResponseSize {
		return fmt.Errorf("payload type %v, %d bytes; want COMPRESSABLE, %d bytes", t, len(body), largeResponseSize)
	}
	if !bytes.Equal(body, make([]byte, largeResponseSize)) {
		return errors.New("payload body is not all zeros")
	}
	return nil
}

func runCustomMetadata(r *reactor.Reactor) error {
	req := &testpb.SimpleRequest{
		ResponseType: testpb.PayloadType_COMPRESSABLE,
		ResponseSize: 1,
		Payload:      &testpb.Payload{Type: testpb.PayloadType_COMPRESSABLE, Body: make([]byte, 1)},
	}
	md := metadata.Pairs(initialMetadataKey, initialMetadataValue, trailingMetadataKey, trailingMetadataValue)
	p := reactor.Call(r, unaryCall, req, &calls.Options{Metadata: md, ResponseMetadata: true})
	resp, err := await(r, p)
	if err != nil {
		return err
	}
	if n := len(resp.GetPayload().GetBody()); n != 1 {
		return fmt.Errorf("payload of %d bytes, want 1", n)
	}
	return requireEcho(p.Header(), p.Trailer())
}

// requireStatus checks that err is a prpc error with code and exactly message, as the status
// gRPC reports (status.Convert) and as the *calls.Error carries it.
func requireStatus(err error, code codes.Code, message string) error {
	if err == nil {
		return fmt.Errorf("call succeeded; want %v %q", code, message)
	}
	var ce *calls.Error
	if !errors.As(err, &ce) {
		return fmt.Errorf("error %T %v is not a *calls.Error", err, err)
	}
	st := status.Convert(err)
	if st.Code() != code || ce.Code() != code {
		return fmt.Errorf("code %v (status %v), want %v: %v", ce.Code(), st.Code(), code, err)
	}
	if message != "" && (st.Message() != message || ce.Message() != message) {
		return fmt.Errorf("message %q (status %q), want exactly %q", ce.Message(), st.Message(), message)
	}
	return nil
}

func runStatusCodeAndMessage(r *reactor.Reactor) error {
	req := &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.Unknown), Message: statusMessage}}
	_, err := await(r, reactor.Call(r, unaryCall, req, nil))
	return requireStatus(err, codes.Unknown, statusMessage)
}

func runSpecialStatusMessage(r *reactor.Reactor) error {
	req := &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.Unknown), Message: specialStatusMessage}}
	_, err := await(r, reactor.Call(r, unaryCall, req, nil))
	return requireStatus(err, codes.Unknown, specialStatusMessage)
}

// runErrorMetadata is custom_metadata on a failed call: the server echoes the metadata and
// fails with the status it is asked for; the header and the trailer reach the caller with
// the status, each where the server put it. grpc-go sends the header in a frame of its own
// here; connect-go sends a header and then the trailers with no message between.
func runErrorMetadata(r *reactor.Reactor) error {
	req := &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.Unknown), Message: statusMessage}}
	md := metadata.Pairs(initialMetadataKey, initialMetadataValue, trailingMetadataKey, trailingMetadataValue)
	p := reactor.Call(r, unaryCall, req, &calls.Options{Metadata: md, ResponseMetadata: true})
	_, err := await(r, p)
	if err := requireStatus(err, codes.Unknown, statusMessage); err != nil {
		return err
	}
	if err := requireEcho(p.Header(), p.Trailer()); err != nil {
		return err
	}
	var ce *calls.Error
	if errors.As(err, &ce) {
		if got := ce.Trailer().Get(trailingMetadataKey); len(got) != 1 || got[0] != trailingMetadataValue {
			return fmt.Errorf("the error's trailer %s = %q, want [%q]", trailingMetadataKey, got, trailingMetadataValue)
		}
	}
	return nil
}

// requireEcho checks that header and trailer carry the values custom_metadata sends, each
// exactly once.
func requireEcho(header, trailer metadata.MD) error {
	if got := header.Get(initialMetadataKey); len(got) != 1 || got[0] != initialMetadataValue {
		return fmt.Errorf("header %s = %q, want [%q] (headers %v)", initialMetadataKey, got, initialMetadataValue, header)
	}
	if got := trailer.Get(trailingMetadataKey); len(got) != 1 || got[0] != trailingMetadataValue {
		return fmt.Errorf("trailer %s = %q, want [%q] (trailers %v)", trailingMetadataKey, got, trailingMetadataValue, trailer)
	}
	return nil
}

func runUnimplementedMethod(r *reactor.Reactor) error {
	_, err := await(r, reactor.Call(r, unimplementedCall, &testpb.Empty{}, nil))
	return requireAnswered(err, codes.Unimplemented)
}

func runUnimplementedService(r *reactor.Reactor) error {
	_, err := await(r, reactor.Call(r, unimplementedSvcCall, &testpb.Empty{}, nil))
	return requireAnswered(err, codes.Unimplemented)
}

// requireAnswered checks that err has code and does not claim the call was never sent: the
// server answered it (grpc-go with a gRPC status, connect-go's HTTP mux with a 404 that gRPC
// reads as Unimplemented).
func requireAnswered(err error, code codes.Code) error {
	if err := requireStatus(err, code, ""); err != nil {
		return err
	}
	var ce *calls.Error
	if errors.As(err, &ce) && ce.NotSent() {
		return fmt.Errorf("%v: NotSent, but the server answered the call", err)
	}
	return nil
}

// runTimeout1ms is the unary counterpart of timeout_on_sleeping_server, whose server sleeps on
// a stream: the interop TestService has no sleeping unary method, so the call instead asks for
// a 32 MiB response with a 1 ms deadline. The server has to allocate 32 MiB and the two sides
// copy it several times (marshal, HTTP/2 frames under flow control, TLS or socket, unmarshal):
// at the ~10 GB/s a core copies memory, each pass takes about 3 ms, so the call cannot finish
// in 1 ms on any machine, and the outcome is deterministic: DeadlineExceeded, matching
// calls.ErrTimeout, whichever of prpc's local deadline and gRPC's notices first — unless the
// method's recent calls already took longer than the millisecond: then prpc sheds the call
// before sending it (calls.ErrShed, never sent), the answer it gives a call that cannot finish
// in time, which the case accepts too. prpc keeps the 1 ms exactly (timeouts are
// time.Durations; only zero and negative ones are special).
// A follow-up EmptyCall on the same reactor then checks that cutting off one stream left the
// shared connection usable.
func runTimeout1ms(r *reactor.Reactor) error {
	req := &testpb.SimpleRequest{ResponseType: testpb.PayloadType_COMPRESSABLE, ResponseSize: sleepyResponseSize}
	start := time.Now()
	_, err := await(r, reactor.Call(r, unaryCall, req, &calls.Options{Timeout: time.Millisecond}))
	took := time.Since(start)
	switch {
	case errors.Is(err, calls.ErrShed):
		// prpc's own answer when the method's recent calls (large_unary's, say) took longer
		// than the millisecond: the call could not finish in time, so it was never sent.
		var ce *calls.Error
		if !errors.As(err, &ce) || !ce.NotSent() {
			return fmt.Errorf("after %v: got %v, shed but not said to be never sent", took, err)
		}
	case !errors.Is(err, calls.ErrTimeout):
		return fmt.Errorf("after %v: got %v, want calls.ErrTimeout (or calls.ErrShed)", took, err)
	default:
		if err := requireStatus(err, codes.DeadlineExceeded, ""); err != nil {
			return err
		}
	}
	if err := runEmptyUnary(r); err != nil {
		return fmt.Errorf("empty_unary after the timeout: %w", err)
	}
	return nil
}
