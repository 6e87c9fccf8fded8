package reactor

import (
	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
)

// StreamReopened returns how many times Resubscribe reopened s, for tests.
func StreamReopened[Req, Resp proto.Message](s *calls.Stream[Req, Resp]) uint64 {
	st, ok := (*callcore.Stream[Req, Resp])(s).Owner().(*stream)
	if !ok {
		return 0 // refused at open
	}
	return st.reopened.Load()
}

// StreamEndDecided reports whether s's end is decided (pushed for Tick or about to be), for
// tests that stop a stream after its end.
func StreamEndDecided[Req, Resp proto.Message](s *calls.Stream[Req, Resp]) bool {
	st, ok := (*callcore.Stream[Req, Resp])(s).Owner().(*stream)
	return !ok || st.isEnded()
}
