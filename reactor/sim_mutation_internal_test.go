//go:build prpcmutant

package reactor

import (
	"testing"

	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callqueue"
)

// simMutations are the bugs the mutation test builds into the core, and the number of seeds
// within which the simulation must catch each: docs/design.md's Deterministic simulation lists
// the bugs, and TestMutations logs the seed that caught each (.ci/run prints those lines).
var simMutations = []struct {
	name, bug string
	within    uint64
}{
	{"skip-claim-cas", "the reactor takes a running call without the compare-and-swap of its claim", 10},
	{"deliver-cut", "a call cut off while its lane runs it is delivered before the lane has finished", 10},
	{"leak-admission", "delivering a failed call does not free its admission slot", 10},
	{"callback-twice", "a failed call's callback (reactor.Go) runs twice", 10},
	{"no-cancel-transport", "cutting a call off does not cancel its transport call", 10},
	{"limit-leak", "a lane that skips a call settled while it waited never gives back its place under the adaptive limit", 10},
	{"limit-ignored", "lanes take calls whatever the adaptive limit", 10},
	{"hedge-after-decided", "a lane sends a queued hedge of a call already decided", 10},
	{"hedge-keep-losers", "the attempts that lost a hedged call are not cancelled", 10},
	{"hedge-no-budget", "hedges are sent whatever the budget", 100},
	{"coalesce-cancel-first", "the first call of a coalesced transport call, settling alone, cancels the transport call the others joined", 50},
	{"coalesce-share-response", "the calls a coalesced transport call serves share one response message", 10},
	{"coalesce-any-age", "a call joins a transport call however long it has been running, past CoalesceMaxAge", 10},
	{"shed-sent", "a lane sends a call that can no longer finish in time, then fails it as shed", 10},
	{"coalesce-fail-later", "a transport call that ends at its deadline fails the calls that joined it with later deadlines", 100},
	{"stream-end-twice", "a stream's end is decided again after it was decided: Close's, then its receiver's", 80},
	{"stream-read-ahead", "a stream's receiver reads the next message while its ring is full", 10},
	{"stream-lost-wake", "Tick frees a place in a stream's ring without waking the receiver that waits for one", 10},
	{"stream-after-cancel", "the messages waiting when a stream is cancelled are delivered after the cancel", 10},
	{"stream-keep-oldest", "a keep-latest stream keeps the waiting message and drops the newer one", 10},
	{"stream-reopen-stopped", "Resume runs, to reopen a stream, after the stream was cancelled", 10},
	{"stream-end-hostq", "a stream's end goes to the host queue, ahead of its messages waiting in the outbox", 40},
	{"stream-no-backoff", "a stream reopens once Resume has given its request, without waiting for its backoff", 10},
	{"stream-unsent-lost", "the messages a Bidi stream's Send accepted and gRPC never got are missing from Unsent", 10},
	{"stream-run-by-method", "a run of OnMessages takes the carriers that follow of any stream of its method, not its stream's alone", 50},
	{"stream-late-cause", "a stop that comes after a Bidi stream's server ended it, while its sender has not exited, names the end", 150},
}

// TestMutations builds each bug into the core in turn (go test -tags prpcmutant) and checks
// that the simulation catches it within its stated number of seeds, logging how many seeds it
// took and how many of the first simMutationSeeds fail.
func TestMutations(t *testing.T) {
	const simMutationSeeds = 200
	t.Cleanup(func() { setMutation("") })
	for _, m := range simMutations {
		t.Run(m.name, func(t *testing.T) {
			setMutation(m.name)
			first, failed := uint64(0), 0
			var firstErr error
			for seed := uint64(1); seed <= simMutationSeeds; seed++ {
				w, err := runSeed(t, seed, simMaxEvents, false)
				if err != nil {
					t.Fatal(err)
				}
				if w.err == nil {
					continue
				}
				failed++
				if first == 0 {
					first, firstErr = seed, w.err
				}
			}
			if first == 0 || first > m.within {
				t.Fatalf("%s (%s): first caught by seed %d, want within %d", m.name, m.bug, first, m.within)
			}
			t.Logf("| %s | %s | seed %d | %d of %d | %v |", m.name, m.bug, first, failed, simMutationSeeds, firstErr)
		})
	}
}

func setMutation(name string) {
	mutation = name
	callcore.SetMutation(name)
	callqueue.SetMutation(name)
}
