package reactortest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	protocodec "google.golang.org/grpc/encoding/proto"
	"google.golang.org/grpc/mem"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/reactor/reactortest"
)

// fakeStreams is a TestService implementation with the streaming methods, as a user's fake
// server would be: Watch sends req.Count messages, req.Message and an index from req.Start,
// each with req.PayloadBytes bytes, or until the stream's context is done if req.Forever,
// then ends with req.FailCode; Chat echoes each request until the client closes its side.
// Each send that returns is reported on sent, if not nil, with its error; Watch's end on
// ended, if not nil.
type fakeStreams struct {
	testpb.UnimplementedTestServiceServer
	sent  chan error
	ended chan error
}

func (f *fakeStreams) Watch(req *testpb.WatchRequest, ss grpc.ServerStreamingServer[testpb.EchoResponse]) (err error) {
	if f.ended != nil {
		defer func() { f.ended <- err }()
	}
	payload := []byte(strings.Repeat("x", int(req.GetPayloadBytes())))
	for i := req.GetStart(); req.GetForever() || i < req.GetStart()+req.GetCount(); i++ {
		err := ss.Send(&testpb.EchoResponse{Message: fmt.Sprint(req.GetMessage(), i), Payload: payload})
		if f.sent != nil {
			f.sent <- err
		}
		if err != nil {
			return err
		}
	}
	if c := req.GetFailCode(); c != 0 {
		return status.Error(codes.Code(c), req.GetFailMessage())
	}
	return nil
}

func (f *fakeStreams) Chat(ss grpc.BidiStreamingServer[testpb.EchoRequest, testpb.EchoResponse]) error {
	for {
		req, err := ss.Recv()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if err := ss.Send(&testpb.EchoResponse{Message: req.GetMessage()}); err != nil {
			return err
		}
	}
}

// streamsBackend returns a Backend serving f as TestService, and a client of it.
func streamsBackend(f *fakeStreams) (*reactortest.Backend, testpb.TestServiceClient) {
	b := reactortest.NewBackend()
	testpb.RegisterTestServiceServer(b, f)
	return b, testpb.NewTestServiceClient(b)
}

// recvAll receives from s until an error, and returns the messages and the error.
func recvAll[Resp any](s interface{ Recv() (*Resp, error) }) ([]*Resp, error) {
	var got []*Resp
	for {
		m, err := s.Recv()
		if err != nil {
			return got, err
		}
		got = append(got, m)
	}
}

// messages returns the Message of each response.
func messages(resps []*testpb.EchoResponse) []string {
	out := []string{}
	for _, r := range resps {
		out = append(out, r.GetMessage())
	}
	return out
}

// TestStreamServerStreaming checks that a server stream delivers the handler's messages in
// order, then its end: io.EOF for OK, else its status, once; from a registered service, a
// HandleStream func and a method nobody serves, which counts in Streams all the same.
func TestStreamServerStreaming(t *testing.T) {
	defer goleak.VerifyNone(t)
	tests := []struct {
		name    string
		path    string
		req     *testpb.WatchRequest
		want    []string
		wantErr error // nil: io.EOF
	}{
		{"ok", testpb.TestService_Watch_FullMethodName, &testpb.WatchRequest{Count: 3, Message: "w", Start: 7}, []string{"w7", "w8", "w9"}, nil},
		{"none, ok", testpb.TestService_Watch_FullMethodName, &testpb.WatchRequest{}, []string{}, nil},
		{"error after messages", testpb.TestService_Watch_FullMethodName, &testpb.WatchRequest{Count: 2, Message: "w", FailCode: int32(codes.NotFound), FailMessage: "gone"}, []string{"w0", "w1"}, status.Error(codes.NotFound, "gone")},
		{"a func", "/prpctest.Funcs/Watch", &testpb.WatchRequest{Count: 2, Message: "f"}, []string{"f0", "f1"}, nil},
		{"a func's error", "/prpctest.Funcs/Watch", &testpb.WatchRequest{Count: 1, Message: "f", FailCode: int32(codes.Aborted), FailMessage: "no"}, []string{"f0"}, status.Error(codes.Aborted, "no")},
		{"not served", "/prpctest.Nobody/Watch", &testpb.WatchRequest{Count: 1}, []string{}, status.Error(codes.Unimplemented, "unknown method /prpctest.Nobody/Watch")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeStreams{}
			b, _ := streamsBackend(f)
			reactortest.HandleStream(b, calls.MustStreamMethod[*testpb.WatchRequest, *testpb.EchoResponse]("/prpctest.Funcs/Watch"), func(_ context.Context, req *testpb.WatchRequest, send func(*testpb.EchoResponse) error) error {
				return f.Watch(req, &sendOnly{send: send})
			})
			cs, err := b.NewStream(context.Background(), &testpb.TestService_ServiceDesc.Streams[0], tc.path)
			require.NoError(t, err)
			s := &grpc.GenericClientStream[testpb.WatchRequest, testpb.EchoResponse]{ClientStream: cs}
			if err := s.SendMsg(tc.req); err != nil {
				require.Equal(t, io.EOF, err, "a stream that has ended already")
			}
			require.NoError(t, s.CloseSend())
			got, err := recvAll(s)
			require.Equal(t, tc.want, messages(got))
			if tc.wantErr == nil {
				require.Equal(t, io.EOF, err)
			} else {
				require.Equal(t, status.Convert(tc.wantErr).Proto(), status.Convert(err).Proto(), "%v", err)
			}
			_, again := s.Recv()
			require.Equal(t, err, again, "the end repeats")
			require.Error(t, cs.Context().Err(), "a finished stream's context ends")
			require.Equal(t, 1, b.Streams(tc.path))
			require.Zero(t, b.Calls(tc.path))
		})
	}
}

// sendOnly is the grpc.ServerStreamingServer a HandleStream func's send stands for.
type sendOnly struct {
	grpc.ServerStreamingServer[testpb.EchoResponse]
	send func(*testpb.EchoResponse) error
}

func (s *sendOnly) Send(m *testpb.EchoResponse) error { return s.send(m) }

// TestStreamBidi checks that a bidirectional stream echoes each request as it comes, from a
// registered service and from a HandleBidi func, and ends OK after the client closes its
// side; that the call's codec encodes the requests and decodes the responses.
func TestStreamBidi(t *testing.T) {
	defer goleak.VerifyNone(t)
	for _, path := range []string{testpb.TestService_Chat_FullMethodName, "/prpctest.Funcs/Chat"} {
		t.Run(path, func(t *testing.T) {
			b, _ := streamsBackend(&fakeStreams{})
			reactortest.HandleBidi(b, calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse]("/prpctest.Funcs/Chat"), func(ctx context.Context, recv func() (*testpb.EchoRequest, error), send func(*testpb.EchoResponse) error) error {
				for {
					req, err := recv()
					if err == io.EOF {
						return nil
					}
					if err != nil {
						return err
					}
					if err := send(&testpb.EchoResponse{Message: req.GetMessage()}); err != nil {
						return err
					}
				}
			})
			codec := &countingCodec{CodecV2: encoding.GetCodecV2(protocodec.Name)}
			cs, err := b.NewStream(context.Background(), &testpb.TestService_ServiceDesc.Streams[1], path, grpc.ForceCodecV2(codec))
			require.NoError(t, err)
			s := &grpc.GenericClientStream[testpb.EchoRequest, testpb.EchoResponse]{ClientStream: cs}
			for i := range 3 {
				msg := fmt.Sprint("m", i)
				require.NoError(t, s.Send(&testpb.EchoRequest{Message: msg}))
				resp, err := s.Recv()
				require.NoError(t, err)
				require.Equal(t, msg, resp.GetMessage())
			}
			require.NoError(t, s.CloseSend())
			_, err = s.Recv()
			require.Equal(t, io.EOF, err)
			require.Equal(t, 3, codec.marshals)
			require.Equal(t, 3, codec.unmarshals)
			require.Equal(t, 1, b.Streams(path))
		})
	}
}

// countingCodec counts the messages it encodes and decodes.
type countingCodec struct {
	encoding.CodecV2
	marshals, unmarshals int
}

func (c *countingCodec) Marshal(v any) (mem.BufferSlice, error) {
	c.marshals++
	return c.CodecV2.Marshal(v)
}

func (c *countingCodec) Unmarshal(data mem.BufferSlice, v any) error {
	c.unmarshals++
	return c.CodecV2.Unmarshal(data, v)
}

// clientStreamDesc describes a client-streaming method.
var clientStreamDesc = grpc.StreamDesc{StreamName: "Sum", ClientStreams: true}

// TestStreamClientStreaming checks a client stream: the handler receives every request, and
// the client its one response with the end; a handler that sends none or two fails the call
// with Internal, as grpc-go's client does.
func TestStreamClientStreaming(t *testing.T) {
	defer goleak.VerifyNone(t)
	const path = "/prpctest.Funcs/Sum"
	tests := []struct {
		name    string
		replies int
		want    string
		wantErr string
	}{
		{"one response", 1, "abc", ""},
		{"none", 0, "", "cardinality violation: received no response message from non-server-streaming RPC"},
		{"two", 2, "", "cardinality violation: expected <EOF> for non server-streaming RPCs, but received another message"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := reactortest.NewBackend()
			reactortest.HandleBidi(b, calls.MustBidiMethod[*testpb.EchoRequest, *testpb.EchoResponse](path), func(ctx context.Context, recv func() (*testpb.EchoRequest, error), send func(*testpb.EchoResponse) error) error {
				var all strings.Builder
				for {
					req, err := recv()
					if err == io.EOF {
						break
					}
					if err != nil {
						return err
					}
					all.WriteString(req.GetMessage())
				}
				for range tc.replies {
					if err := send(&testpb.EchoResponse{Message: all.String()}); err != nil {
						return err
					}
				}
				return nil
			})
			cs, err := b.NewStream(context.Background(), &clientStreamDesc, path)
			require.NoError(t, err)
			s := &grpc.GenericClientStream[testpb.EchoRequest, testpb.EchoResponse]{ClientStream: cs}
			for _, m := range []string{"a", "b", "c"} {
				require.NoError(t, s.Send(&testpb.EchoRequest{Message: m}))
			}
			resp, err := s.CloseAndRecv()
			if tc.wantErr != "" {
				require.Equal(t, codes.Internal, status.Code(err), "%v", err)
				require.Equal(t, tc.wantErr, status.Convert(err).Message())
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, resp.GetMessage())
		})
	}
}

// TestStreamClientErrors checks the client's errors grpc-go returns: a send after CloseSend,
// or after the one request of a server stream, fails with Internal; a send after the end
// with io.EOF, RecvMsg then returning the status; a server-streaming handler that gets two
// requests fails with Internal; a context done already fails NewStream.
func TestStreamClientErrors(t *testing.T) {
	defer goleak.VerifyNone(t)
	watchDesc := &testpb.TestService_ServiceDesc.Streams[0]
	t.Run("send after CloseSend", func(t *testing.T) {
		b, _ := streamsBackend(&fakeStreams{})
		cs, err := b.NewStream(context.Background(), &testpb.TestService_ServiceDesc.Streams[1], testpb.TestService_Chat_FullMethodName)
		require.NoError(t, err)
		require.NoError(t, cs.CloseSend())
		require.NoError(t, cs.CloseSend(), "CloseSend again")
		err = cs.SendMsg(&testpb.EchoRequest{})
		require.Equal(t, status.Error(codes.Internal, "SendMsg called after CloseSend").Error(), err.Error())
		require.Equal(t, io.EOF, cs.RecvMsg(&testpb.EchoResponse{}))
	})
	t.Run("second request of a server stream", func(t *testing.T) {
		b, _ := streamsBackend(&fakeStreams{})
		cs, err := b.NewStream(context.Background(), watchDesc, testpb.TestService_Watch_FullMethodName)
		require.NoError(t, err)
		require.NoError(t, cs.SendMsg(&testpb.WatchRequest{}))
		require.Equal(t, codes.Internal, status.Code(cs.SendMsg(&testpb.WatchRequest{})))
		require.Equal(t, io.EOF, cs.RecvMsg(&testpb.EchoResponse{}))
	})
	t.Run("send after the end", func(t *testing.T) {
		b := reactortest.NewBackend()
		cs, err := b.NewStream(context.Background(), &testpb.TestService_ServiceDesc.Streams[1], "/prpctest.Nobody/Chat")
		require.NoError(t, err)
		err = cs.RecvMsg(&testpb.EchoResponse{})
		require.Equal(t, codes.Unimplemented, status.Code(err))
		require.Equal(t, io.EOF, cs.SendMsg(&testpb.EchoRequest{}))
		require.Equal(t, err, cs.RecvMsg(&testpb.EchoResponse{}))
	})
	t.Run("a server stream's handler gets two requests", func(t *testing.T) {
		b, _ := streamsBackend(&fakeStreams{})
		cs, err := b.NewStream(context.Background(), &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, testpb.TestService_Watch_FullMethodName)
		require.NoError(t, err)
		require.NoError(t, cs.SendMsg(&testpb.WatchRequest{}))
		require.NoError(t, cs.SendMsg(&testpb.WatchRequest{}))
		err = cs.RecvMsg(&testpb.EchoResponse{})
		require.Equal(t, codes.Internal, status.Code(err))
		require.Equal(t, "cardinality violation: received multiple request messages for non-client-streaming RPC", status.Convert(err).Message())
	})
	t.Run("context done already", func(t *testing.T) {
		b, _ := streamsBackend(&fakeStreams{})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := b.NewStream(ctx, watchDesc, testpb.TestService_Watch_FullMethodName)
		require.Equal(t, codes.Canceled, status.Code(err))
		require.Equal(t, 1, b.Streams(testpb.TestService_Watch_FullMethodName))
	})
}
