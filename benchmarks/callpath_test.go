package benchmarks

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/codec"
	"github.com/trixnew/prpc/internal/testpb"
	"github.com/trixnew/prpc/limits"
)

type echoServer struct {
	testpb.UnimplementedTestServiceServer
}

func (echoServer) Echo(_ context.Context, req *testpb.EchoRequest) (*testpb.EchoResponse, error) {
	return &testpb.EchoResponse{Message: req.GetMessage()}, nil
}

// startEcho serves TestService on an ephemeral loopback port until the benchmark ends.
func startEcho(b *testing.B) *grpc.ClientConn {
	b.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	s := grpc.NewServer()
	testpb.RegisterTestServiceServer(s, echoServer{})
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Serve(lis) }()
	cc, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close(); s.Stop(); <-done })
	return cc
}

const echoPath = "/prpctest.TestService/Echo"

// BenchmarkCallPath compares the two ways to run "a stream as unary" with prpc's codec, one per
// goroutine as each invoker lane has its own: ClientConn.Invoke with grpc.ForceCodecV2 (what
// the invokers use) and NewStream with a StreamDesc of prpc's own, which in grpc-go 1.85 costs
// an extra goroutine per call. Both send the same bytes; the loopback server is in the same
// process.
func BenchmarkCallPath(b *testing.B) {
	cc := startEcho(b)
	req := &testpb.EchoRequest{Message: "player-1234567890"}
	b.Run("invoke", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			force := grpc.ForceCodecV2(codec.New(limits.Limits{}))
			for pb.Next() {
				reply := &testpb.EchoResponse{}
				if err := cc.Invoke(context.Background(), echoPath, req, reply, force); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	desc := &grpc.StreamDesc{StreamName: "Echo"}
	b.Run("newstream", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			force := grpc.ForceCodecV2(codec.New(limits.Limits{}))
			for pb.Next() {
				reply := &testpb.EchoResponse{}
				s, err := cc.NewStream(context.Background(), desc, echoPath, force)
				if err == nil {
					err = s.SendMsg(req)
				}
				if err == nil {
					err = s.CloseSend()
				}
				if err == nil {
					err = s.RecvMsg(reply)
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}
