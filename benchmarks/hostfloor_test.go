package benchmarks

import (
	"testing"

	"github.com/trixnew/prpc/examples/dataservice/networkpb"
	"github.com/trixnew/prpc/internal/encode"
)

// BenchmarkHostFloor measures, with warm memory, the steps that a call's submission cannot do
// without, for prpc and for the hand-written pool, so that the submission's cost in a burst
// (BenchmarkHostCostBurst, the burst suite's loop suite) can be read against its floor:
//
//   - encode: what a lane's codec does for every call (no longer the host's): the encoding of
//     a GetPlayerRequest into a reused buffer, with the plan of its type;
//   - pool-send: all the pool's submission does beyond the game's own request, a closure
//     and a send on the buffered channel its workers read (the encoding is the workers');
//   - pool-send-only: the send alone, since the game writes a callback closure for prpc too.
func BenchmarkHostFloor(b *testing.B) {
	req := &networkpb.GetPlayerRequest{Xuid: "2535412345678901"}
	plan := encode.PlanFor(req.ProtoReflect().Descriptor()) // as the codec makes it
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		var buf []byte
		for b.Loop() {
			var err error
			if buf, err = plan.Append(buf, req); err != nil {
				b.Fatal(err)
			}
		}
	})
	type job struct {
		req *networkpb.GetPlayerRequest
		cb  func(*networkpb.GetPlayerResponse, error)
	}
	// send runs the pool's submission b.N times, emptying the channel, untimed, when full.
	send := func(b *testing.B, next func(i int) job) {
		jobs := make(chan job, 1<<16)
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			if len(jobs) == cap(jobs) {
				b.StopTimer()
				for len(jobs) > 0 {
					<-jobs
				}
				b.StartTimer()
			}
			jobs <- next(i)
			i++
		}
	}
	b.Run("pool-send", func(b *testing.B) {
		send(b, func(i int) job {
			return job{req, func(*networkpb.GetPlayerResponse, error) { _ = i }}
		})
	})
	b.Run("pool-send-only", func(b *testing.B) {
		j := job{req, func(*networkpb.GetPlayerResponse, error) {}}
		send(b, func(int) job { return j })
	})
}
