package reactor_test

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"time"

	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// The stream methods a program opens are declared once, as its unary ones are (a generated
// client declares them itself).
var (
	exampleWatch = calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse]("/prpctest.TestService/Watch")
	exampleChat  = calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.TestService/Chat")
)

// A server stream's messages run OnMessage inside Tick, on the loop goroutine, in the order
// received, and its end runs OnEnd once, after the last one. (The backend here is
// reactortest's in-memory one; against a server, set Target and Credentials as for calls.)
func ExampleWatch() {
	b := reactortest.NewBackend()
	reactortest.HandleStream(b, exampleWatch, func(_ context.Context, req *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
		for i := range req.GetCount() {
			if err := send(&testpb.EchoResponse{Message: req.GetMessage() + strconv.FormatInt(i, 10)}); err != nil {
				return err
			}
		}
		return nil
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	ended := false
	stream := reactor.Watch(r, exampleWatch, &testpb.WatchRequest{Count: 3, Message: "board "}, nil,
		calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{
			OnMessage: func(m *testpb.EchoResponse) { fmt.Println(m.GetMessage()) },
			OnEnd:     func(err error) { fmt.Println("ended:", err); ended = true },
		})
	defer stream.Cancel() // a game cancels a stream it no longer needs; after the end it does nothing

	for !ended { // the game loop
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	// Output:
	// board 0
	// board 1
	// board 2
	// ended: <nil>
}

// A busy stream can hand Tick's messages over in runs: OnMessages gets the messages that
// arrived one after another, in order, in one callback, which costs the loop less per message
// than OnMessage. The slice is the stream's until the callback returns; the messages are the
// game's.
func ExampleWatch_onMessages() {
	b := reactortest.NewBackend()
	reactortest.HandleStream(b, exampleWatch, func(_ context.Context, req *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
		for i := range req.GetCount() {
			if err := send(&testpb.EchoResponse{Message: req.GetMessage() + strconv.FormatInt(i, 10)}); err != nil {
				return err
			}
		}
		return nil
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	var chat []string // the game's own state, touched only in Tick
	ended := false
	reactor.Watch(r, exampleWatch, &testpb.WatchRequest{Count: 5, Message: "line "}, nil,
		calls.StreamHandler[*testpb.WatchRequest, *testpb.EchoResponse]{
			OnMessages: func(msgs []*testpb.EchoResponse) {
				for _, m := range msgs {
					chat = append(chat, m.GetMessage())
				}
			},
			OnEnd: func(err error) { ended = true },
		})

	for !ended { // the game loop
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	fmt.Println(chat)
	// Output:
	// [line 0 line 1 line 2 line 3 line 4]
}

// A bidirectional stream's Send never blocks the loop: it queues the message, which a
// goroutine of the stream encodes and sends; replies arrive in Tick, as a server stream's do.
func ExampleBidi() {
	b := reactortest.NewBackend()
	reactortest.HandleBidi(b, exampleChat, func(_ context.Context, recv func() (*testpb.EchoRequest, error), send func(*testpb.EchoResponse) error) error {
		for {
			req, err := recv()
			if err == io.EOF {
				return nil // the client closed its side
			}
			if err != nil {
				return err
			}
			if err := send(&testpb.EchoResponse{Message: "echo: " + req.GetMessage()}); err != nil {
				return err
			}
		}
	})
	r, err := reactor.New(reactor.Config{Conn: b})
	if err != nil {
		panic(err)
	}
	defer r.Close(context.Background())

	ended := false
	chat := reactor.Bidi(r, exampleChat, &calls.StreamOptions{MaxSendQueue: 8},
		calls.StreamHandler[*testpb.EchoRequest, *testpb.EchoResponse]{
			OnMessage: func(m *testpb.EchoResponse) { fmt.Println(m.GetMessage()) },
			OnEnd:     func(err error) { fmt.Println("ended:", err); ended = true },
		})
	for _, line := range []string{"hello", "guild"} {
		if err := chat.Send(&testpb.EchoRequest{Message: line}); err != nil {
			fmt.Println("not sent:", err) // the queue is full (ErrOverloaded) or the stream ended (ErrStreamDone)
		}
	}
	_ = chat.CloseSend() // after the messages queued before it

	for !ended {
		<-r.Ready()
		r.Tick(2 * time.Millisecond)
	}
	fmt.Println("unsent:", len(chat.Unsent()), "code of a Send now:", status.Code(chat.Send(&testpb.EchoRequest{})))
	// Output:
	// echo: hello
	// echo: guild
	// ended: <nil>
	// unsent: 0 code of a Send now: FailedPrecondition
}
