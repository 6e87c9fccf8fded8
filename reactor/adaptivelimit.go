package reactor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/trixnew/prpc/internal/callqueue"
)

// AdaptiveLimit tunes the adaptive limit on the calls in flight (Config.AdaptiveLimit), which
// is on by default: the number of calls the lanes run at once moves between Floor and
// Workers × BatchSize by AIMD,
// the loss-based limit that Netflix's concurrency-limits library recommends for clients. A
// call that fails with DeadlineExceeded, ResourceExhausted or Unavailable, or that the
// reactor cuts off at its deadline while a lane runs it, is a drop: the limit is multiplied
// by Backoff, at most once per window of calls in flight (the drops of calls already in
// flight when it last shrank do not shrink it again). Any other response from the backend,
// while the calls in flight fill at least half the limit, counts toward growing it by one,
// which it does once per window of such calls (as many as the limit). Calls settled
// while they wait for a lane (their deadline passed, cancelled), cancelled ones and those
// whose request does not encode say nothing about the backend and leave it as it is.
//
// Calls above the limit wait in prpc's queue, critical ones first as always, where their
// deadlines apply: a call whose deadline passes there fails with ErrTimeout, never sent,
// instead of adding to an overloaded backend's queue. While that queue stands, the lanes take
// its newest calls first, those with the most time left, and shed a call that can no longer
// finish in time (calls.ErrShed) rather than send it. MaxOutstanding still bounds every call
// admitted. Stats.InFlightLimit reports the current limit.
//
// While the backend answers, the limit stays at Workers × BatchSize and costs the lanes a few
// operations under the ready queue's lock per call. It protects a backend whose calls run
// after their client gave up (a thread pool in front of a database): without it, such a
// backend, once overloaded, spends its capacity on calls already given up and answers none
// in time until long after the load has dropped.
//
// The zero value of each field means its default; there is no "none" for any of them, so
// None is rejected.
type AdaptiveLimit struct {
	// Disabled turns the limit off: the lanes run up to Workers × BatchSize calls at once,
	// whatever the backend says, and the other fields must be zero. Use it only for a
	// backend known to answer every call the lanes can send within its timeout.
	Disabled bool
	// Floor is the lowest the limit goes. Default Workers; from 1 to Workers × BatchSize.
	Floor int
	// Initial is the limit to start from. Default Workers × BatchSize, so that the reactor
	// runs as without the limit until the backend drops calls; from Floor to Workers ×
	// BatchSize.
	Initial int
	// Backoff is the ratio a drop multiplies the limit by. Default 0.9; more than 0 and
	// less than 1.
	Backoff float64
}

// defaultLimitBackoff is AdaptiveLimit.Backoff's default, Netflix's AIMDLimit's.
const defaultLimitBackoff = 0.9

// resolveLimit checks c.AdaptiveLimit, once Workers and BatchSize are resolved, and returns
// the ready queue's limit with every default filled in, or nil if it is disabled.
func (c *Config) resolveLimit() (*callqueue.LimitConfig, error) {
	l := c.AdaptiveLimit
	if l == nil {
		l = &AdaptiveLimit{}
	}
	if l.Disabled {
		if *l != (AdaptiveLimit{Disabled: true}) {
			return nil, fieldError("AdaptiveLimit", fmt.Sprintf("%+v", *l), "sets Floor, Initial or Backoff with Disabled: leave them zero, or the limit on")
		}
		return nil, nil
	}
	lanes := c.Workers * c.BatchSize
	cfg := callqueue.LimitConfig{Floor: l.Floor, Max: lanes, Initial: l.Initial, Backoff: l.Backoff}
	if cfg.Floor == 0 {
		cfg.Floor = c.Workers
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = defaultLimitBackoff
	}
	switch {
	case cfg.Floor < 1 || cfg.Floor > lanes:
		return nil, fieldError("AdaptiveLimit.Floor", l.Floor, fmt.Sprintf("must be between 1 and Workers × BatchSize, %d (0 means the default, Workers, %d)", lanes, c.Workers))
	case cfg.Initial != 0 && (cfg.Initial < cfg.Floor || cfg.Initial > lanes):
		return nil, fieldError("AdaptiveLimit.Initial", l.Initial, fmt.Sprintf("must be between Floor, %d, and Workers × BatchSize, %d (0 means the default, Workers × BatchSize)", cfg.Floor, lanes))
	case !(cfg.Backoff > 0 && cfg.Backoff < 1):
		return nil, fieldError("AdaptiveLimit.Backoff", l.Backoff, fmt.Sprintf("must be more than 0 and less than 1 (0 means the default, %v)", defaultLimitBackoff))
	}
	if cfg.Initial == 0 {
		cfg.Initial = lanes
	}
	return &cfg, nil
}

// limitSignal says what a lane's finished transport call tells the adaptive limit about the
// backend: err is the transport's error, before the lane turns it into the call's; cut says
// that the reactor settled the call while the lane ran it, and ctxErr is then the error its
// context ended with (nil if the lane's call returned before the reactor cancelled it).
// encoded is false if the request never encoded.
func limitSignal(err error, cut bool, ctxErr error, encoded bool) callqueue.Signal {
	if !encoded || err == errRequestModified {
		return callqueue.Neutral
	}
	switch status.Code(err) {
	case codes.DeadlineExceeded, codes.ResourceExhausted, codes.Unavailable:
		return callqueue.Drop
	case codes.Canceled:
		return callqueue.Neutral
	}
	switch {
	case cut && errors.Is(ctxErr, context.DeadlineExceeded):
		return callqueue.Drop
	case cut:
		return callqueue.Neutral // cancelled or cut off by Close: the lane's result is discarded
	}
	return callqueue.Success
}

// answered records a successful transport call of method m that returned at now, having taken
// d of the left it had before its deadline when it was sent: a sample of m's transport floor
// (shed.go), and, with the adaptive limit, a drop rather than a success if it says that the
// backend queued it close to failing (congested).
func (l *laneState) answered(m *methodEntry, now int64, d, left time.Duration) {
	if l.r.limited && congested(d, left, &m.floor, now) {
		l.slot.Signal = callqueue.Drop
	}
	m.floor.sample(now, d)
}

// congested reports whether a successful transport call that took d, sent with left before
// its deadline, to a method whose recent calls took at least floor's need at now, is a sign of
// a backend about to fail calls, which the adaptive limit counts as a drop: it took more than
// half the time it had, and more than twice the floor, so that it waited in a queue at the
// backend rather than ran long. An overloaded backend's queue grows until calls time out in
// it; a backend whose calls run after their client gave up then spends its capacity on them.
// Taken as a drop while the calls still succeed, the queue stops growing well before that,
// without a call lost. A backend that is only slow, its calls taking most of their timeout
// however few run at once, has a floor as high as their time, so that its limit does not
// shrink. The floor is read only for a call that took more than half its time: most answers
// cost one comparison.
func congested(d, left time.Duration, floor *transportFloor, now int64) bool {
	return 2*d > left && d > 2*floor.need(now)
}
