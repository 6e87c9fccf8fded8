package main

import (
	"context"
	"fmt"
	"time"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/examples/dataservice/networkpb/networkpbprpc"
	"github.com/trixnew/prpc/loop"
	"github.com/trixnew/prpc/reactor"
)

// getPlayer is the descriptor protoc-gen-prpc generated for DataService.GetPlayer.
var getPlayer = networkpbprpc.DataService_GetPlayer

// prpcClient runs the burst through a prpc reactor, as a game server would: calls submitted
// from the loop goroutine, callbacks run by Tick on the same goroutine, woken by Ready.
type prpcClient struct {
	r       *reactor.Reactor
	budget  time.Duration
	timeout time.Duration
}

// newPRPCClient returns a reactor for addr with s's Workers and BatchSize, room for maxCalls
// outstanding calls, and timeout as every call's timeout. With metadata, GetPlayer's policy
// asks for every response's header and trailer (reactor.MethodPolicy.ResponseMetadata).
func newPRPCClient(addr string, s Shape, timeout, budget time.Duration, maxCalls int, metadata bool) (*prpcClient, error) {
	var policies []reactor.MethodPolicy
	if metadata {
		policies = []reactor.MethodPolicy{{Method: getPlayer, ResponseMetadata: true}}
	}
	r, err := reactor.New(reactor.Config{
		Policies:       policies,
		Target:         addr,
		Credentials:    reactor.Insecure(),
		Workers:        s.Workers,
		BatchSize:      s.Batch,
		DefaultTimeout: timeout,
		MaxTimeout:     max(timeout, reactor.DefaultMaxTimeout),
		MaxOutstanding: max(maxCalls, reactor.DefaultMaxOutstanding),
	})
	if err != nil {
		return nil, err
	}
	return &prpcClient{r: r, budget: budget, timeout: timeout}, nil
}

func (c *prpcClient) Name() string { return clientPRPC }

func (c *prpcClient) burst(xuids []string, rec *recorder) error {
	r := c.r
	for i, xuid := range xuids {
		req := &networkpb.GetPlayerRequest{Xuid: xuid}
		start := time.Now()
		reactor.Call(r, getPlayer, req, nil).
			Then(func(resp *networkpb.GetPlayerResponse) { rec.success(i, start, resp) }).
			OnError(func(err error) { rec.failure(i, start, err) })
	}
	// Every call settles by its deadline, so outcomes stop arriving only if prpc is broken.
	stuck := time.NewTimer(c.timeout + 30*time.Second)
	defer stuck.Stop()
	for !rec.complete() {
		select {
		case <-r.Ready():
		case <-stuck.C:
			return fmt.Errorf("stuck: %d of %d outcomes delivered; stats %+v", rec.done, rec.n, r.Stats())
		}
		r.Tick(c.budget)
	}
	return nil
}

// driven returns the reactor: the loop suite's loop ticks it and closes it.
func (c *prpcClient) driven() loop.Reactor { return c.r }

// submitAll submits one GetPlayer call per xuid, each with a Then and an OnError callback
// that capture the call's index and start time.
func (c *prpcClient) submitAll(b *loopBurst) {
	for i, xuid := range b.xuids {
		req := &networkpb.GetPlayerRequest{Xuid: xuid}
		start := time.Now()
		reactor.Call(c.r, getPlayer, req, nil).
			Then(func(resp *networkpb.GetPlayerResponse) {
				b.rec.success(i, start, resp)
				b.noteOutcome()
			}).
			OnError(func(err error) {
				b.rec.failure(i, start, err)
				b.noteOutcome()
			})
	}
}

func (c *prpcClient) state() string { return fmt.Sprintf("stats %+v", c.r.Stats()) }

// Close closes the reactor; every call has been delivered by then, so nothing is cut off.
func (c *prpcClient) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return c.r.Close(ctx)
}
