// Package limitcheck applies a reactor's limits.Limits to its calls: it checks a request's
// encoded size and a call's request metadata before anything is sent, counts response
// metadata as MaxMetadataBytes counts it, and gives the gRPC call and dial options that cap
// gRPC's own message and header limits, so that no option can raise them above the
// configured ones. Package reactor and the lanes' codec use it; users set the limits in
// package limits. Nothing here keeps state; every function is safe for concurrent use.
package limitcheck

import (
	"fmt"
	"math"

	"google.golang.org/grpc"

	"github.com/trixnew/prpc/limits"
)

// CheckRequest returns a *SizeError if an encoded request of n bytes is over l.MaxRequestBytes.
func CheckRequest(l limits.Limits, n int) error {
	if n > l.MaxRequestBytes {
		return &SizeError{What: "request", Field: "MaxRequestBytes", Size: n, Limit: l.MaxRequestBytes}
	}
	return nil
}

// CallOptions returns the gRPC call options that cap gRPC's own send and receive message
// limits at l. Put them after any user options: for these options the last one wins.
func CallOptions(l limits.Limits) []grpc.CallOption {
	return []grpc.CallOption{
		grpc.MaxCallSendMsgSize(l.MaxRequestBytes),
		grpc.MaxCallRecvMsgSize(l.MaxResponseBytes),
	}
}

// DialOptions returns the dial options that advertise and enforce, for the whole connection,
// MaxReceivedHeaderBytes (its default if unset) as the limit of the header lists accepted from
// the server; prpc always sets it, so gRPC's own default never applies. Put them after any
// user options: for these options the last one wins. The message size limits are call options
// (CallOptions), which every call passes last; repeating them as the connection's default
// call options would only make grpc-go merge the two lists, an allocation per call.
func DialOptions(l limits.Limits) []grpc.DialOption {
	headers := min(max(int64(l.WithDefaults().MaxReceivedHeaderBytes), 0), math.MaxUint32) // int64: 32-bit platforms too
	return []grpc.DialOption{
		grpc.WithMaxHeaderListSize(uint32(headers)),
	}
}

// SizeError reports a request, response or metadata over its limit, and names the field of
// limits.Limits that sets the limit. The reactor fails the call with calls.ErrTooLarge and
// this error's message.
type SizeError struct {
	What  string // "request", "response" or "metadata"
	Field string // the Limits field that sets Limit: "MaxRequestBytes", "MaxResponseBytes" or "MaxMetadataBytes"
	Size  int    // bytes
	Limit int    // bytes
}

// Error returns a message naming the size, the limit and the Limits field that sets it, for
// example "request is 5000 bytes, over the 4096-byte limit (Limits.MaxRequestBytes)". A
// SizeError without a Field names only the size and the limit.
func (e *SizeError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s is %d bytes, over the %d-byte limit", e.What, e.Size, e.Limit)
	}
	return fmt.Sprintf("%s is %d bytes, over the %d-byte limit (Limits.%s)", e.What, e.Size, e.Limit, e.Field)
}
