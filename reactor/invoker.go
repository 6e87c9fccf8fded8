package reactor

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/codec"
	"github.com/trixnew/prpc/internal/callcore"
)

// lane is one of an invoker's BatchSize goroutines: it runs one blocking unary call at a
// time with ClientConn.Invoke, the cheapest call path in grpc-go (no extra goroutine per call,
// unary interceptors run), and reports each completion to the reactor goroutine. A finished
// call frees its slot at once; no lane waits for another.
func (r *Reactor) lane(work <-chan *callcore.Call) {
	defer r.lanes.Done()
	var header, trailer metadata.MD
	var p peer.Peer
	opts := append(append([]grpc.CallOption(nil), r.baseOpts...), grpc.Header(&header), grpc.Trailer(&trailer), grpc.Peer(&p))
	var frame codec.Frame
	reply := codec.Reply{Max: r.cfg.Limits.MaxResponseBytes}
	for c := range work {
		header, trailer, p = nil, nil, peer.Peer{}
		c.LaneValue, c.LaneErr = nil, nil
		if err := r.invoke(c, opts, &frame, &reply); err != nil {
			c.LaneErr = r.laneError(c, err, trailer)
		}
		c.LaneHeader, c.LaneTrailer, c.LanePeer = header, trailer, p.Addr
		frame.Bytes, reply.Msg = nil, nil
		if c.LaneErr == nil {
			releaseRequest(c)
		} else { // a failed call may return before gRPC has written the request: leave it to the GC
			c.Request = nil
		}
		r.in.push(event{kind: evComplete, c: c})
	}
}

// invoke runs c's transport call, sets LaneValue on success and returns the transport's
// error otherwise. A panic fails only this call, with Internal.
func (r *Reactor) invoke(c *callcore.Call, opts []grpc.CallOption, frame *codec.Frame, reply *codec.Reply) (err error) {
	defer func() {
		if p := recover(); p != nil {
			r.cfg.Logger.Error("prpc: invoker panicked", "method", c.Ops.Path, "panic", p, "stack", string(debug.Stack()))
			c.LaneValue = nil
			err = status.Error(codes.Internal, fmt.Sprintf("prpc: invoker panicked: %v", p))
		}
	}()
	frame.Bytes = c.Request.B
	reply.Msg = c.Ops.NewResponse()
	if len(c.CallOpts) > 0 || c.WaitForReady {
		// User options first: for the limits, the last option wins.
		own := make([]grpc.CallOption, 0, len(c.CallOpts)+1+len(opts))
		own = append(own, c.CallOpts...)
		if c.WaitForReady {
			own = append(own, grpc.WaitForReady(true))
		}
		opts = append(own, opts...)
	}
	ctx := c.Ctx
	if c.MD != nil {
		ctx = metadata.NewOutgoingContext(ctx, c.MD)
	}
	if err = r.conn.Invoke(ctx, c.Ops.Path, frame, reply, opts...); err == nil {
		c.LaneValue = reply.Msg
	}
	return err
}

// laneError turns the error of a transport call into the call's *calls.Error.
// A call whose parent context was cancelled fails with ErrCancelled, or with ErrTimeout if the
// parent's deadline passed (it applies to the call). An Unavailable call failed by a recorded
// handshake failure gets it as its cause (a *calls.HandshakeError).
func (r *Reactor) laneError(c *callcore.Call, err error, trailer metadata.MD) error {
	if c.Parent != nil && status.Code(err) != codes.DeadlineExceeded {
		switch perr := c.Parent.Err(); {
		case errors.Is(perr, context.DeadlineExceeded):
			return calls.NewError(calls.ErrTimeout, c.Ops.Path, "deadline of the parent context exceeded", perr)
		case perr != nil:
			return calls.NewError(calls.ErrCancelled, c.Ops.Path, "parent context done: "+perr.Error(), perr)
		}
	}
	if he := r.handshakes.cause(err); he != nil {
		return calls.HandshakeStatusError(c.Ops.Path, err, trailer, he)
	}
	return calls.StatusError(c.Ops.Path, err, trailer)
}
