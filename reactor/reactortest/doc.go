// Package reactortest helps users test game logic that makes prpc calls, without a network,
// in the spirit of net/http/httptest.
//
// Its helpers plug into reactor.Config. For example, ManualClock is a reactor.Clock whose
// time moves only when the test says so: passed as Config.Clock, it makes call deadlines and
// Tick budgets deterministic.
package reactortest
