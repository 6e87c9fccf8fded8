package calls

import "github.com/trixnew/prpc/internal/callcore"

// State is the visible state of a call.
type State uint8

// States of a call. A call is Pending until Tick delivers its outcome, except that a call
// rejected at submission is Failed at once.
const (
	Pending State = iota
	Succeeded
	Failed
)

// Promise.State converts the states of callcore, which are these: an index other than 0
// fails to compile.
var (
	_ = [1]struct{}{}[Pending-State(callcore.Pending)]
	_ = [1]struct{}{}[Succeeded-State(callcore.Succeeded)]
	_ = [1]struct{}{}[Failed-State(callcore.Failed)]
)

// String returns "pending", "succeeded" or "failed".
func (s State) String() string {
	switch s {
	case Pending:
		return "pending"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	}
	return "invalid"
}
