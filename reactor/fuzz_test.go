package reactor_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/memconn"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
	"github.com/trixnew/prpc/reactor"
)

// fuzzDecodeConn is a grpc.ClientConnInterface whose Invoke answers every call with raw
// response bytes taken from the request's payload, decoded into the reply through prpc's codec,
// with a decoding error wrapped as grpc-go's unary path wraps it. It lets the fuzzer put any
// bytes where a server's response would be, with the reactor's lanes, settlement and Tick
// around them.
type fuzzDecodeConn struct{}

func (fuzzDecodeConn) Invoke(_ context.Context, _ string, args, reply any, opts ...grpc.CallOption) error {
	raw, err := memconn.Encode(args, opts)
	if err != nil {
		return err
	}
	var req testpb.EchoRequest
	if err := proto.Unmarshal(raw, &req); err != nil {
		return status.Errorf(codes.FailedPrecondition, "fuzz conn: decoding the request: %v", err)
	}
	return memconn.Decode(req.GetPayload(), reply, opts)
}

func (fuzzDecodeConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, status.Error(codes.Unimplemented, "fuzz conn: no streams")
}

// Two response types with different field kinds: strings (UTF-8 checked), bytes and a map in
// EchoResponse; varints, a bool and strings in EchoRequest.
var (
	fuzzDecodeEcho = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpcfuzz.Decode/Echo")
	fuzzDecodeReq  = calls.MustMethod[*testpb.EchoRequest, *testpb.EchoRequest]("/prpcfuzz.Decode/Request")
)

// fuzzOutcome records how one fuzzed call settled.
type fuzzOutcome struct {
	then, onError, always int
	resp                  proto.Message
	err                   error
}

func fuzzWatch[Resp proto.Message](p *calls.Promise[Resp], o *fuzzOutcome) {
	p.Then(func(resp Resp) { o.then++; o.resp = resp }).
		OnError(func(err error) { o.onError++; o.err = err }).
		Always(func() { o.always++ })
}

// FuzzResponseDecoding feeds arbitrary bytes to the reactor as the response of a call and
// checks that the call settles exactly once, with the response proto.Unmarshal would decode
// or with Internal when it would fail, and never panics. Its seed corpus (f.Add below and
// testdata/fuzz/FuzzResponseDecoding) runs in every go test.
func FuzzResponseDecoding(f *testing.F) {
	full, _ := proto.Marshal(&testpb.EchoResponse{Message: "hi", Payload: []byte{0, 1, 2}, Metadata: map[string]string{"k": "v"}})
	f.Add([]byte{})
	f.Add(full)
	f.Add([]byte{0x0a, 0x02, 0xc3, 0x28})                   // message: invalid UTF-8
	f.Add([]byte{0x0a, 0x05, 'h', 'i'})                     // length past the end
	f.Add([]byte{0x12, 0xff, 0xff, 0xff, 0xff, 0x0f})       // a 4 GiB length prefix
	f.Add([]byte{0x18, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}) // a truncated varint
	f.Add([]byte{0x1a, 0x04, 0x0a, 0x02, 'k'})              // a truncated map entry
	f.Add([]byte{0x07})                                     // field 0, wire type 7
	f.Add([]byte{0x0b, 0x0c})                               // an empty group (deprecated wire types)
	f.Add([]byte{0xf8, 0xff, 0xff, 0xff, 0x0f, 0x01})       // field number 2^29-1, unknown field

	// One reactor for the whole run: the fuzz function runs many times per process.
	r, err := reactor.New(reactor.Config{
		Conn:   fuzzDecodeConn{},
		Limits: limits.Limits{MaxRequestBytes: 64 << 20}, // carry any fuzz input in the request
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := r.Close(ctx); err != nil {
			f.Errorf("Close: %v", err)
		}
	})

	f.Fuzz(func(t *testing.T, data []byte) {
		var asEcho, asReq fuzzOutcome
		pEcho := reactor.Call(r, fuzzDecodeEcho, &testpb.EchoRequest{Payload: data}, nil)
		pReq := reactor.Call(r, fuzzDecodeReq, &testpb.EchoRequest{Payload: data}, nil)
		fuzzWatch(pEcho, &asEcho)
		fuzzWatch(pReq, &asReq)
		waitFor(t, r, func() bool { return asEcho.always > 0 && asReq.always > 0 })
		if rep := r.Tick(time.Second); rep.Delivered != 0 {
			t.Fatalf("a later Tick delivered %d more calls", rep.Delivered)
		}
		if p := r.Stats().Pending; p != 0 {
			t.Fatalf("Pending = %d after both calls settled", p)
		}
		fuzzCheck(t, "EchoResponse", data, &testpb.EchoResponse{}, asEcho, pEcho.State())
		fuzzCheck(t, "EchoRequest", data, &testpb.EchoRequest{}, asReq, pReq.State())
	})
}

// fuzzCheck asserts that o is the single settlement that decoding data into want's type calls for.
func fuzzCheck(t *testing.T, what string, data []byte, want proto.Message, o fuzzOutcome, state calls.State) {
	t.Helper()
	if o.always != 1 || o.then+o.onError != 1 {
		t.Fatalf("%s: settled %d times (Then %d, OnError %d)", what, o.always, o.then, o.onError)
	}
	if wantErr := proto.Unmarshal(data, want); wantErr != nil {
		if o.err == nil {
			t.Fatalf("%s: call succeeded; proto.Unmarshal fails with %v", what, wantErr)
		}
		var ce *calls.Error
		if !errors.As(o.err, &ce) || ce.Code() != codes.Internal || status.Code(o.err) != codes.Internal {
			t.Fatalf("%s: failed with %v (%T); want a *calls.Error with code Internal", what, o.err, o.err)
		}
		if state != calls.Failed {
			t.Fatalf("%s: state %v after a failure", what, state)
		}
		return
	}
	if o.err != nil {
		t.Fatalf("%s: call failed with %v; proto.Unmarshal succeeds", what, o.err)
	}
	if !proto.Equal(want, o.resp) {
		t.Fatalf("%s: got %v; want %v", what, o.resp, want)
	}
	if state != calls.Succeeded {
		t.Fatalf("%s: state %v after a success", what, state)
	}
}
