package calls

import "github.com/trixnew/prpc/internal/callcore"

// State is the visible state of a call.
type State uint8

// States of a call. A call is Pending until Tick delivers its outcome, except that a call
// rejected at submission is Failed at once.
const (
	Pending   State = State(callcore.Pending)
	Succeeded State = State(callcore.Succeeded)
	Failed    State = State(callcore.Failed)
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
