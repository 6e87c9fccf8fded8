// Package handpool is what prpc is measured against: the pool a Go developer writes by hand to
// make unary gRPC calls from a game loop without blocking it.
//
// A Pool is Workers goroutines fed by a buffered channel of {request, callback}. Each worker
// takes the next job, calls the generated stub's method with a timeout, and sends the reply
// with its callback to a buffered channel of replies. The game loop submits calls with Submit
// and drains the replies with Tick(budget), which runs their callbacks on the loop goroutine,
// as prpc's reactor.Tick does. Ready signals when replies wait, so that a loop woken by it
// (loop.Run) drains the pool between ticks as it drains a prpc reactor: a Pool is a
// loop.Reactor.
//
// The host goroutine pays, per call, one channel send of the job in Submit (the request and
// the callback closure are the caller's), and in Tick one channel receive and the callback.
// The request is encoded by the worker, not by the host.
package handpool

import (
	"context"
	"fmt"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/reactor"
)

// Config configures a Pool. Every field must be positive but CaptureMetadata.
type Config struct {
	// Workers is the number of goroutines that make calls: at most Workers calls are in
	// flight at once.
	Workers int
	// Capacity is the number of jobs, and separately of replies, the channels hold. Submit
	// blocks while Capacity jobs wait for a worker, and a worker blocks while Capacity
	// replies wait for Tick, so a burst that should never block needs Capacity ≥ its calls.
	Capacity int
	// Timeout is every call's timeout, counted from when a worker takes the call, as a
	// hand-written worker sets context.WithTimeout around the stub's call.
	Timeout time.Duration
	// CaptureMetadata makes every call capture its response's header and trailer
	// (grpc.Header, grpc.Trailer), as prpc does by default for Promise.Header and
	// Promise.Trailer; the Pool then drops them.
	CaptureMetadata bool
}

// Pool makes calls of one unary method on Workers goroutines and hands each reply, with its
// callback, to the goroutine that calls Tick. Submit, Tick and Close belong to that one
// goroutine (the game loop); Ready is safe from any goroutine.
type Pool[Req, Resp any] struct {
	call    func(context.Context, Req, ...grpc.CallOption) (Resp, error)
	cfg     Config
	jobs    chan job[Req, Resp]
	replies chan reply[Resp]
	ready   chan struct{}
	base    context.Context // parent of every call's context; cancelled by a Close cut short
	cancel  context.CancelFunc
	workers sync.WaitGroup
	closed  bool
}

type job[Req, Resp any] struct {
	req Req
	cb  func(Resp, error)
}

type reply[Resp any] struct {
	resp Resp
	err  error
	cb   func(Resp, error)
}

// New starts cfg.Workers goroutines that make calls with call, typically a generated stub's
// method value such as networkpb.NewDataServiceClient(cc).GetPlayer. The Pool does not own
// the connection behind call: close it after Close. New returns an error naming the first
// field of cfg that is not positive.
func New[Req, Resp any](call func(context.Context, Req, ...grpc.CallOption) (Resp, error), cfg Config) (*Pool[Req, Resp], error) {
	switch {
	case cfg.Workers <= 0:
		return nil, fmt.Errorf("handpool: Config.Workers is %d; must be more than 0", cfg.Workers)
	case cfg.Capacity <= 0:
		return nil, fmt.Errorf("handpool: Config.Capacity is %d; must be more than 0", cfg.Capacity)
	case cfg.Timeout <= 0:
		return nil, fmt.Errorf("handpool: Config.Timeout is %v; must be more than 0", cfg.Timeout)
	case call == nil:
		return nil, fmt.Errorf("handpool: call is nil; pass the stub's method")
	}
	base, cancel := context.WithCancel(context.Background())
	p := &Pool[Req, Resp]{
		call:    call,
		cfg:     cfg,
		jobs:    make(chan job[Req, Resp], cfg.Capacity),
		replies: make(chan reply[Resp], cfg.Capacity),
		ready:   make(chan struct{}, 1),
		base:    base,
		cancel:  cancel,
	}
	for range cfg.Workers {
		p.workers.Go(p.work)
	}
	return p, nil
}

// work is one worker: it makes the calls it takes from jobs until jobs is closed.
func (p *Pool[Req, Resp]) work() {
	var header, trailer metadata.MD
	var opts []grpc.CallOption
	if p.cfg.CaptureMetadata {
		opts = []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)}
	}
	for j := range p.jobs {
		ctx, cancel := context.WithTimeout(p.base, p.cfg.Timeout)
		resp, err := p.call(ctx, j.req, opts...)
		cancel()
		header, trailer = nil, nil
		p.replies <- reply[Resp]{resp: resp, err: err, cb: j.cb}
		select {
		case p.ready <- struct{}{}:
		default: // a signal already waits
		}
	}
}

// Submit queues a call of req whose reply Tick hands to cb, with the call's error (nil on
// success). It blocks only while Capacity jobs wait for a worker. It must not be called after
// Close.
func (p *Pool[Req, Resp]) Submit(req Req, cb func(Resp, error)) {
	p.jobs <- job[Req, Resp]{req: req, cb: cb}
}

// Tick runs the callbacks of waiting replies, in the order the workers sent them, until none
// waits or budget is spent; it runs at least one if one waits, so it may exceed budget by one
// callback. It never blocks. Remaining in its report is the number of replies still waiting.
func (p *Pool[Req, Resp]) Tick(budget time.Duration) reactor.TickReport {
	var rep reactor.TickReport
	var start time.Time
	for {
		select {
		case r := <-p.replies:
			if rep.Delivered == 0 {
				start = time.Now()
			}
			r.cb(r.resp, r.err)
			rep.Delivered++
			if rep.Elapsed = time.Since(start); rep.Elapsed >= budget {
				rep.Remaining = len(p.replies)
				return rep
			}
		default:
			return rep
		}
	}
}

// Ready returns a channel that receives a value after a worker has sent a reply, if none
// waited on it already: a signal that Tick has work. One value may stand for many replies,
// or for replies an earlier Tick already ran.
func (p *Pool[Req, Resp]) Ready() <-chan struct{} { return p.ready }

// Queued returns the number of calls submitted that no worker has taken yet. It is safe from
// any goroutine.
func (p *Pool[Req, Resp]) Queued() int { return len(p.jobs) }

// Waiting returns the number of replies waiting for Tick. It is safe from any goroutine.
func (p *Pool[Req, Resp]) Waiting() int { return len(p.replies) }

// Close stops the Pool: the workers make the calls already submitted, then exit, while Close
// runs the callbacks of their replies. If ctx is done first, the calls still running or
// queued are cancelled (their callbacks get the cancellation error) and Close returns
// ctx.Err(). Every callback has run when Close returns. Later calls of Close do nothing.
func (p *Pool[Req, Resp]) Close(ctx context.Context) error {
	if p.closed {
		return nil
	}
	p.closed = true
	close(p.jobs)
	done := make(chan struct{})
	go func() {
		p.workers.Wait()
		close(done)
	}()
	var err error
	stop := ctx.Done()
	for waiting := true; waiting; {
		select {
		case r := <-p.replies:
			r.cb(r.resp, r.err)
		case <-stop:
			err, stop = ctx.Err(), nil
			p.cancel()
		case <-done:
			waiting = false
		}
	}
	p.cancel()
	for len(p.replies) > 0 {
		r := <-p.replies
		r.cb(r.resp, r.err)
	}
	return err
}
