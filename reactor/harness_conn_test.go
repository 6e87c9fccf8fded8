package reactor_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/internal/memconn"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// echoBackend returns an in-memory backend that answers every Echo call at once with its
// Message.
func echoBackend() *reactortest.Backend {
	b := reactortest.NewBackend()
	reactortest.Handle(b, echo, func(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
		return &testpb.EchoResponse{Message: req.GetMessage()}, nil
	})
	return b
}

// recordingConn is a grpc.ClientConnInterface that answers Echo requests without a network and
// records what each call was given: its deadline, call options and argument types, which a
// reactortest.Backend does not show. If block is not nil, Invoke waits until it is closed or
// the call's context is done.
type recordingConn struct {
	block   chan struct{}
	entered chan struct{} // receives one value per Invoke, if not nil

	mu    sync.Mutex
	calls []recordedCall
}

type recordedCall struct {
	method    string
	deadline  time.Time
	hasDL     bool
	opts      []grpc.CallOption
	argsType  string // of the request gRPC would encode
	replyType string // of the message gRPC would decode the response into
}

func (f *recordingConn) Invoke(ctx context.Context, method string, args, reply any, opts ...grpc.CallOption) error {
	dl, ok := ctx.Deadline()
	rec := recordedCall{method: method, deadline: dl, hasDL: ok, opts: opts}
	rec.argsType, rec.replyType = fmt.Sprintf("%T", args), fmt.Sprintf("%T", reply)
	f.mu.Lock()
	f.calls = append(f.calls, rec)
	f.mu.Unlock()
	if f.entered != nil {
		f.entered <- struct{}{}
	}
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	raw, err := memconn.Encode(args, opts)
	if err != nil {
		return err
	}
	req := &testpb.EchoRequest{}
	if err := proto.Unmarshal(raw, req); err != nil {
		return err
	}
	resp, err := proto.Marshal(&testpb.EchoResponse{Message: req.GetMessage()})
	if err != nil {
		return err
	}
	return memconn.Decode(resp, reply, opts)
}

func (f *recordingConn) NewStream(context.Context, *grpc.StreamDesc, string, ...grpc.CallOption) (grpc.ClientStream, error) {
	return nil, errors.New("recordingConn: streams are not supported")
}

func (f *recordingConn) recorded() []recordedCall {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recordedCall(nil), f.calls...)
}
