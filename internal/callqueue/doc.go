// Package callqueue holds the data structures a reactor's call records pass through between
// its goroutines, each with its own invariants and its own tests:
//
//   - SubmissionRing: admitted calls, from the goroutines that call Call or Go to the reactor
//     goroutine (lock-free for producers, one consumer);
//   - Inbox: cancels, Close and lanes' reports to the reactor goroutine;
//   - ReadyQueue: admitted calls waiting for an invoker lane, critical ones first, and the
//     gate of the adaptive in-flight limit (LimitConfig, limit.go);
//   - Outbox: settled calls waiting for Tick, and HostQueue, the calls whose callbacks run at
//     the next Tick without passing through another goroutine;
//   - DeadlineHeap: the reactor goroutine's calls by deadline, cleaned lazily;
//   - RecordPool and FreedRecords: call records, reused between bursts.
//
// Each type's doc says which goroutines may call which method. The reactor (package reactor)
// is their only user; its deterministic simulation exercises them together.
package callqueue
