package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/trixnew/prpc/benchmarks/internal/handpool"
	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// poolClient is the loop suite's grpc-go client: the hand-written pool (handpool) of
// Workers × Batch goroutines fed by a channel of {request, callback}, which call the
// generated stub's GetPlayer with timeout and send their replies to a channel that the loop
// drains with Tick(budget), woken between ticks by Ready, as it drains a prpc reactor. Both
// channels hold maxCalls, so neither the loop nor a worker blocks on them in a burst.
type poolClient struct {
	cc      *grpc.ClientConn
	pool    *handpool.Pool[*networkpb.GetPlayerRequest, *networkpb.GetPlayerResponse]
	budget  time.Duration
	timeout time.Duration
}

// newPoolClient dials addr and starts the pool. With metadata, every call captures its
// response's header and trailer, as prpc does by default.
func newPoolClient(addr string, s Shape, timeout, budget time.Duration, maxCalls int, metadata bool) (*poolClient, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	cc.Connect()
	pool, err := handpool.New(networkpb.NewDataServiceClient(cc).GetPlayer, handpool.Config{
		Workers: s.Workers * s.Batch, Capacity: maxCalls, Timeout: timeout, CaptureMetadata: metadata,
	})
	if err != nil {
		return nil, errors.Join(err, cc.Close())
	}
	return &poolClient{cc: cc, pool: pool, budget: budget, timeout: timeout}, nil
}

func (c *poolClient) Name() string { return clientBaseline }

// burst submits the calls as the loop suite's game does, then drains the replies with
// Tick(budget) woken by Ready until every call has its outcome.
func (c *poolClient) burst(xuids []string, rec *recorder) error {
	b := &loopBurst{xuids: xuids, rec: rec}
	c.submitAll(b)
	stuck := time.NewTimer(c.timeout + 30*time.Second)
	defer stuck.Stop()
	for !rec.complete() {
		select {
		case <-c.pool.Ready():
		case <-stuck.C:
			return fmt.Errorf("stuck: %d of %d outcomes delivered", rec.done, rec.n)
		}
		c.pool.Tick(c.budget)
	}
	return nil
}

// submitAll submits one GetPlayer call per xuid, each with one callback that captures the
// call's index and start time.
func (c *poolClient) submitAll(b *loopBurst) {
	for i, xuid := range b.xuids {
		req := &networkpb.GetPlayerRequest{Xuid: xuid}
		start := time.Now()
		c.pool.Submit(req, func(resp *networkpb.GetPlayerResponse, err error) {
			if err != nil {
				b.rec.failure(i, start, err)
			} else {
				b.rec.success(i, start, resp)
			}
			b.noteOutcome()
		})
	}
}

func (c *poolClient) state() string {
	return fmt.Sprintf("%d calls queued for a worker, %d replies waiting for Tick", c.pool.Queued(), c.pool.Waiting())
}

// metricsOf returns nil: the pool has no metrics adapters.
func (c *poolClient) metricsOf() *metricsAdapters { return nil }

// driven returns the pool as the loop suite's loop drives it; its Close closes the pool,
// then the connection.
func (c *poolClient) driven() loop.Reactor { return poolReactor{c} }

// Close closes the pool, running the callbacks of any calls left, then the connection.
func (c *poolClient) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return poolReactor{c}.Close(ctx)
}

// poolReactor is a poolClient as a loop.Reactor that the loop closes.
type poolReactor struct{ c *poolClient }

func (p poolReactor) Tick(budget time.Duration) reactor.TickReport { return p.c.pool.Tick(budget) }
func (p poolReactor) Ready() <-chan struct{}                       { return p.c.pool.Ready() }

// Close closes the pool within ctx, then the connection.
func (p poolReactor) Close(ctx context.Context) error {
	return errors.Join(p.c.pool.Close(ctx), p.c.cc.Close())
}
