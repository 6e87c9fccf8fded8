package main

import (
	"context"
	"runtime/pprof"
)

// asClient runs f with the profiler label client=name on the calling goroutine, and so on
// every goroutine f starts. Clients are made and their bursts run through it, so a client's
// goroutines carry its name: its host goroutine, prpc's reactor goroutine and lanes or the
// pool's workers, and gRPC's transport goroutines, which its connection starts. A -cpuprofile
// then tells the clients of one run apart, as in go tool pprof -tagfocus client=prpc-go.
func asClient(name string, f func()) {
	pprof.Do(context.Background(), pprof.Labels("client", name), func(context.Context) { f() })
}
