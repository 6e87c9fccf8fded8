// Package callqueue holds the data structures a reactor's call records pass through between
// its goroutines, each with its own invariants:
//
//   - SubmissionRing: admitted calls, from the goroutines that call Call or Go to the reactor
//     goroutine (lock-free for producers, one consumer);
//   - Inbox: cancels, Close, lanes' reports and wake-ups to the reactor goroutine;
//   - ReadyQueue: admitted calls, and hedged calls' next attempts, waiting for an invoker
//     lane, critical ones first, and the gate of the adaptive in-flight limit (LimitConfig,
//     limit.go);
//   - Outbox: settled calls waiting for Tick, and HostQueue, the calls whose callbacks run at
//     the next Tick without passing through another goroutine;
//   - DeadlineHeap: the reactor goroutine's calls by deadline, cleaned lazily;
//   - CallsByPosition: the reactor goroutine's calls by submission position, for the cancels
//     of promises, which know only the position;
//   - RecordPool and FreedRecords: call records, reused between bursts.
//
// Each type's doc says which goroutines may call which method.
//
// Each structure has tests of its own, in the internal test file named after its source file:
// submissions, queue (the inbox and the outbox), ready (the order calls are taken in,
// adaptive LIFO, Close, wake-ups of waiting lanes) with limit (the gate and its AIMD limit),
// hostqueue, deadlines (the heap against a plain model), positions (CallsByPosition, scripts
// of puts, settlements and finds across laps of the ring) and records. The queues between
// goroutines (the submission ring, the inbox, the outbox, the ready queue and the host queue)
// are also tested with many goroutines at once, for the race detector. The reactor (package
// reactor) is their only user; its deterministic simulation exercises them together.
package callqueue
