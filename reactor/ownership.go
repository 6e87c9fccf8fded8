package reactor

import (
	"bytes"
	"errors"
	"sync"

	"google.golang.org/protobuf/proto"

	"github.com/trixnew/prpc/calls"
	"github.com/trixnew/prpc/internal/callcore"
	"github.com/trixnew/prpc/internal/callerr"
)

// The check of Config.CheckRequestOwnership. Call and Go own their request until the call
// settles, because the lane that runs the call encodes it, inside gRPC's call; a request the
// caller modifies meanwhile is sent with whatever it holds when the lane reads it, and only the
// race detector says so. With the check on, a request is encoded once more when it is
// submitted (its snapshot), and:
//
//   - a call whose request is still owned by an unsettled call of the same reactor, and no
//     longer encodes to that call's snapshot, is rejected at submission;
//   - the lane that runs a call encodes the request again just before it sends it, and fails
//     the call, unsent, if that differs from the call's snapshot.
//
// Several calls may share a request that nobody modifies: their snapshots are equal, so both
// checks pass. A request that does not encode is not checked: its lane fails it anyway.
//
// The owned set lives on the reactor, guarded by a mutex: a call enters it at submission and
// leaves it on the Tick goroutine just before its outcome becomes visible (deliver), which
// every admitted call passes exactly once, however it settled; a call that submit rejects
// after entering it leaves it there.

// ownershipContract is what every error of the check ends with.
const ownershipContract = "never sent. Call and Go own their request until the call settles: " +
	"build a fresh request per call (found by Config.CheckRequestOwnership)"

// The messages of the check's two errors.
const (
	msgOwnedRequestModified = "request modified while an earlier call that has not settled owns it; " + ownershipContract
	msgRequestModified      = "request modified after it was submitted, before its call was sent; " + ownershipContract
)

// snapshotOptions encode a request the same way every time, maps included.
var snapshotOptions = proto.MarshalOptions{Deterministic: true}

// ownedRequests is the set of requests owned by the reactor's unsettled calls, with their
// snapshots. Safe from any goroutine.
type ownedRequests struct {
	mu    sync.Mutex
	owned map[proto.Message]*ownedRequest
}

// ownedRequest is one owned request: the snapshot of the first call that owns it, and how
// many unsettled calls own it.
type ownedRequest struct {
	snapshot []byte
	calls    int
}

func newOwnedRequests() *ownedRequests {
	return &ownedRequests{owned: make(map[proto.Message]*ownedRequest)}
}

// acquire takes a snapshot of req, a request being submitted, and enters it in the owned set,
// returning the snapshot; or returns false if an unsettled call owns req and req no longer
// encodes to that call's snapshot. A request that does not encode is not entered: acquire
// returns a nil snapshot and true.
func (o *ownedRequests) acquire(req proto.Message) ([]byte, bool) {
	snapshot, err := snapshotOptions.Marshal(req)
	if err != nil {
		return nil, true
	}
	if snapshot == nil {
		snapshot = []byte{} // an empty message: nil means "not checked"
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.owned[req]; e != nil {
		if !bytes.Equal(e.snapshot, snapshot) {
			return nil, false
		}
		e.calls++
		return snapshot, true
	}
	o.owned[req] = &ownedRequest{snapshot: snapshot, calls: 1}
	return snapshot, true
}

// release removes one call's ownership of req, which acquire entered.
func (o *ownedRequests) release(req proto.Message) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if e := o.owned[req]; e != nil {
		if e.calls--; e.calls == 0 {
			delete(o.owned, req)
		}
	}
}

// len returns how many requests the set holds, for tests.
func (o *ownedRequests) len() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.owned)
}

// own checks req, the request of a call being submitted, and enters it in the owned set, with
// its snapshot in *extra (which it allocates if nil). It returns the rejection of a request
// that an unsettled call owns and that was modified since. Only with the check on.
func (r *Reactor) own(ops *callcore.Ops, req proto.Message, extra **callcore.Extra) *calls.Error {
	snapshot, ok := r.owned.acquire(req)
	if !ok {
		return r.reject(ops, callerr.InvalidArgument, msgOwnedRequestModified, nil)
	}
	if snapshot != nil {
		if *extra == nil {
			*extra = &callcore.Extra{}
		}
		(*extra).Snapshot = snapshot
	}
	return nil
}

// disown removes the ownership of a call with request req and extra, if it holds one. Only
// with the check on.
func (r *Reactor) disown(req proto.Message, extra *callcore.Extra) {
	if extra != nil && extra.Snapshot != nil {
		r.owned.release(req)
	}
}

// errRequestModified is what a lane's check returns for a request modified since it was
// submitted; laneError turns it into the call's error.
var errRequestModified = errors.New("prpc: request modified after it was submitted")

// checkRequest encodes c's request as its snapshot was, into a buffer the lane reuses, and
// returns errRequestModified if the encoding differs from the snapshot, or nil. It returns
// nil at once for a call without a snapshot (the check off, or a request that does not
// encode). A request modified while it is being encoded may make the encoder panic: the
// panic is left to the transport call, which encodes it again and recovers.
func (l *laneState) checkRequest(c *callcore.Call) (err error) {
	if c.Extra == nil || c.Extra.Snapshot == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			err = nil
		}
	}()
	buf, mErr := snapshotOptions.MarshalAppend(l.checkBuf[:0], c.Req)
	if cap(buf) <= maxCheckBuf {
		l.checkBuf = buf[:0]
	}
	if mErr != nil || !bytes.Equal(buf, c.Extra.Snapshot) {
		return errRequestModified
	}
	return nil
}

// maxCheckBuf bounds the buffer a lane keeps for checkRequest between calls.
const maxCheckBuf = 64 << 10
