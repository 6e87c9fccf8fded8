package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
)

// baselineClient is what a Go developer writes without prpc: plain grpc-go with the generated
// stub, a pool of Workers × Batch goroutines pulling calls from a job channel, each result
// handed back to the loop goroutine over a channel. Both channels hold a whole burst, so
// neither the loop nor a worker ever blocks on them. Every call gets a deadline of timeout
// from its submission, as with prpc. With metadata set, each call also captures the
// response's header and trailer (grpc.Header, grpc.Trailer), as prpc does for every call so
// that Promise.Header and Promise.Trailer can return them.
type baselineClient struct {
	cc      *grpc.ClientConn
	stub    networkpb.DataServiceClient
	jobs    chan job
	results chan result
	wg      sync.WaitGroup
	timeout time.Duration
	// withHeader counts the calls that captured a response header (with metadata only).
	withHeader atomic.Int64
}

type job struct {
	i     int
	req   *networkpb.GetPlayerRequest
	start time.Time
}

type result struct {
	i     int
	start time.Time
	resp  *networkpb.GetPlayerResponse
	err   error
}

// newBaselineClient dials addr and starts s.Workers × s.Batch worker goroutines, with
// channels that hold maxCalls jobs and results. With metadata, every call captures its
// response header and trailer.
func newBaselineClient(addr string, s Shape, timeout time.Duration, maxCalls int, metadata bool) (*baselineClient, error) {
	cc, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	cc.Connect()
	c := &baselineClient{
		cc:      cc,
		stub:    networkpb.NewDataServiceClient(cc),
		jobs:    make(chan job, maxCalls),
		results: make(chan result, maxCalls),
		timeout: timeout,
	}
	for range s.Workers * s.Batch {
		c.wg.Go(func() { c.work(metadata) })
	}
	return c, nil
}

func (c *baselineClient) work(captureMetadata bool) {
	var header, trailer metadata.MD
	var opts []grpc.CallOption
	if captureMetadata {
		opts = []grpc.CallOption{grpc.Header(&header), grpc.Trailer(&trailer)}
	}
	for j := range c.jobs {
		ctx, cancel := context.WithDeadline(context.Background(), j.start.Add(c.timeout))
		resp, err := c.stub.GetPlayer(ctx, j.req, opts...)
		cancel()
		if header != nil {
			c.withHeader.Add(1)
			header, trailer = nil, nil
		}
		c.results <- result{i: j.i, start: j.start, resp: resp, err: err}
	}
}

func (c *baselineClient) Name() string { return clientBaseline }

func (c *baselineClient) burst(xuids []string, rec *recorder) error {
	for i, xuid := range xuids {
		req := &networkpb.GetPlayerRequest{Xuid: xuid}
		c.jobs <- job{i: i, req: req, start: time.Now()}
	}
	stuck := time.NewTimer(c.timeout + 30*time.Second)
	defer stuck.Stop()
	for !rec.complete() {
		select {
		case res := <-c.results:
			if res.err != nil {
				rec.failure(res.i, res.start, res.err)
			} else {
				rec.success(res.i, res.start, res.resp)
			}
		case <-stuck.C:
			return fmt.Errorf("stuck: %d of %d outcomes delivered", rec.done, rec.n)
		}
	}
	return nil
}

func (c *baselineClient) Close() error {
	close(c.jobs)
	c.wg.Wait()
	return c.cc.Close()
}
