package main

import (
	"context"
	"errors"
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
// from the loop goroutine in one form of submission, callbacks run by Tick on the same
// goroutine, woken by Ready. Its form is its client name:
//
//   - clientGo: reactor.Go with one func(resp, err) callback, the callback form without a
//     promise;
//   - clientOnSettled: reactor.Call, then the promise's OnSettled with one func(resp, err)
//     callback;
//   - clientThen: reactor.Call, then the promise's Then and OnError, one callback each;
//   - clientGoMetrics: clientGo's form, with both metrics adapters registered over the
//     reactor (metricsAdapters) and scraped while each burst runs.
//
// Every form's callbacks do what the grpc-go clients' do with each outcome, and capture the
// same state: the call's index and start time, and the burst's bookkeeping.
type prpcClient struct {
	form    string
	r       *reactor.Reactor
	budget  time.Duration
	timeout time.Duration
	// metrics are the metrics adapters of clientGoMetrics, nil for the other forms.
	metrics *metricsAdapters
}

// formText describes how the prpc client named form submits a call, for the reports.
func formText(form string) string {
	switch form {
	case clientGo:
		return "reactor.Go with one callback, no promise"
	case clientOnSettled:
		return "reactor.Call, then the promise's OnSettled"
	case clientThen:
		return "reactor.Call, then the promise's Then and OnError"
	case clientGoMetrics:
		return "reactor.Go with one callback, no promise, as prpc-go, with both metrics adapters registered and scraped every " + scrapeEvery.String()
	}
	return form
}

// newPRPCClient returns the prpc client named form (one of prpcForms, or clientGoMetrics): a
// reactor for addr with s's Workers and BatchSize, room for maxCalls outstanding calls, and
// timeout as every call's timeout, and for clientGoMetrics both metrics adapters over it. With
// metadata, GetPlayer's policy asks for every response's header and trailer
// (reactor.MethodPolicy.ResponseMetadata).
func newPRPCClient(form, addr string, s Shape, timeout, budget time.Duration, maxCalls int, metadata bool) (*prpcClient, error) {
	if !isPRPC(form) {
		return nil, fmt.Errorf("unknown prpc client %q; want one of %q or %q", form, prpcForms, clientGoMetrics)
	}
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
	c := &prpcClient{form: form, r: r, budget: budget, timeout: timeout}
	if form == clientGoMetrics {
		if c.metrics, err = newMetricsAdapters(r); err != nil {
			return nil, errors.Join(err, c.Close())
		}
	}
	return c, nil
}

func (c *prpcClient) Name() string { return c.form }

// burst submits the calls in c's form, as the burst suites' game does, then drains the
// outcomes with Tick(budget) woken by Ready until every call has one. Each form has a loop of
// its own, so that the submission measured is the form's alone. The metrics client's
// adapters are scraped from its start to its end, and rec counts the scrapes.
func (c *prpcClient) burst(xuids []string, rec *recorder) (err error) {
	if c.metrics != nil {
		c.metrics.startScraping()
		defer func() {
			var serr error
			rec.scrapes, serr = c.metrics.stopScraping()
			err = errors.Join(err, serr)
		}()
	}
	r := c.r
	switch c.form {
	case clientGo, clientGoMetrics:
		for i, xuid := range xuids {
			req := &networkpb.GetPlayerRequest{Xuid: xuid}
			start := time.Now()
			// A rejection is also delivered to the callback, which records it.
			_ = reactor.Go(r, getPlayer, req, nil, func(resp *networkpb.GetPlayerResponse, err error) {
				if err != nil {
					rec.failure(i, start, err)
				} else {
					rec.success(i, start, resp)
				}
			})
		}
	case clientOnSettled:
		for i, xuid := range xuids {
			req := &networkpb.GetPlayerRequest{Xuid: xuid}
			start := time.Now()
			reactor.Call(r, getPlayer, req, nil).
				OnSettled(func(resp *networkpb.GetPlayerResponse, err error) {
					if err != nil {
						rec.failure(i, start, err)
					} else {
						rec.success(i, start, resp)
					}
				})
		}
	default:
		for i, xuid := range xuids {
			req := &networkpb.GetPlayerRequest{Xuid: xuid}
			start := time.Now()
			reactor.Call(r, getPlayer, req, nil).
				Then(func(resp *networkpb.GetPlayerResponse) { rec.success(i, start, resp) }).
				OnError(func(err error) { rec.failure(i, start, err) })
		}
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

// submitAll submits one GetPlayer call per xuid in c's form, with callbacks that capture
// the call's index and start time and, as the pool's callback does, record the outcome, then
// note it. Each form has a loop of its own, so that the submission measured is the form's
// alone.
func (c *prpcClient) submitAll(b *loopBurst) {
	r := c.r
	switch c.form {
	case clientGo, clientGoMetrics:
		for i, xuid := range b.xuids {
			req := &networkpb.GetPlayerRequest{Xuid: xuid}
			start := time.Now()
			// A rejection is also delivered to the callback, which records it.
			_ = reactor.Go(r, getPlayer, req, nil, func(resp *networkpb.GetPlayerResponse, err error) {
				if err != nil {
					b.rec.failure(i, start, err)
				} else {
					b.rec.success(i, start, resp)
				}
				b.noteOutcome()
			})
		}
	case clientOnSettled:
		for i, xuid := range b.xuids {
			req := &networkpb.GetPlayerRequest{Xuid: xuid}
			start := time.Now()
			reactor.Call(r, getPlayer, req, nil).
				OnSettled(func(resp *networkpb.GetPlayerResponse, err error) {
					if err != nil {
						b.rec.failure(i, start, err)
					} else {
						b.rec.success(i, start, resp)
					}
					b.noteOutcome()
				})
		}
	default:
		for i, xuid := range b.xuids {
			req := &networkpb.GetPlayerRequest{Xuid: xuid}
			start := time.Now()
			reactor.Call(r, getPlayer, req, nil).
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
}

func (c *prpcClient) state() string { return fmt.Sprintf("stats %+v", c.r.Stats()) }

// metricsOf returns the metrics client's adapters, nil for the other forms.
func (c *prpcClient) metricsOf() *metricsAdapters { return c.metrics }

// Close closes the reactor, and the metrics adapters if c has them; every call has been
// delivered by then, so nothing is cut off.
func (c *prpcClient) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := c.r.Close(ctx)
	if c.metrics != nil {
		err = errors.Join(err, c.metrics.close())
	}
	return err
}
