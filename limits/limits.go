// Package limits holds prpc's size limits with their defaults and bounds, the rules for
// outgoing metadata, and the capping of gRPC's own message and header limits so that no
// option can raise them above the configured ones.
package limits

import (
	"fmt"
	"math"

	"google.golang.org/grpc"
)

// Defaults, taken from pRPC.
const (
	DefaultMaxRequestBytes  = 4 << 20  // 4 MiB
	DefaultMaxResponseBytes = 4 << 20  // 4 MiB
	DefaultMaxMetadataBytes = 32 << 10 // 32 KiB
)

// Bounds of the limits. Messages above 1 GiB are far beyond anything a game server should
// move in one unary call, and HTTP/2 peers and proxies commonly refuse header blocks well
// below 1 MiB.
const (
	MaxMessageLimit  = 1 << 30 // upper bound of MaxRequestBytes and MaxResponseBytes
	MaxMetadataLimit = 1 << 20 // upper bound of MaxMetadataBytes
)

// HeaderListSlack is added to MaxMetadataBytes to bound the header lists the client accepts
// from the server, leaving room for the headers gRPC itself sends (status, message,
// content-type, …).
const HeaderListSlack = 8 << 10

// Limits bounds the bytes of one call. The zero value of each field means its default.
type Limits struct {
	// MaxRequestBytes bounds the encoded request. A larger request fails with ErrTooLarge
	// before anything is sent. Default 4 MiB; at most 1 GiB.
	MaxRequestBytes int
	// MaxResponseBytes bounds the encoded response; gRPC refuses a larger one from its
	// length prefix, before reading the body, and the call fails with ErrTooLarge. Default
	// 4 MiB; at most 1 GiB.
	MaxResponseBytes int
	// MaxMetadataBytes bounds the request metadata of one call, counted as HPACK does:
	// Σ len(key) + len(value) + 32 per value, with "-bin" values counted after base64. Larger
	// metadata fails with ErrTooLarge before anything is sent. Default 32 KiB; at most 1 MiB.
	MaxMetadataBytes int
}

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxRequestBytes == 0 {
		l.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if l.MaxResponseBytes == 0 {
		l.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if l.MaxMetadataBytes == 0 {
		l.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	return l
}

// Validate returns an error naming the first field outside its bounds. Zero fields are valid:
// they mean the default.
func (l Limits) Validate() error {
	checks := []struct {
		name          string
		value, max, d int
	}{
		{"MaxRequestBytes", l.MaxRequestBytes, MaxMessageLimit, DefaultMaxRequestBytes},
		{"MaxResponseBytes", l.MaxResponseBytes, MaxMessageLimit, DefaultMaxResponseBytes},
		{"MaxMetadataBytes", l.MaxMetadataBytes, MaxMetadataLimit, DefaultMaxMetadataBytes},
	}
	for _, c := range checks {
		if c.value < 0 || c.value > c.max {
			return fmt.Errorf("prpc: Limits.%s is %d; must be between 1 and %d (0 means the default, %d)",
				c.name, c.value, c.max, c.d)
		}
	}
	return nil
}

// CheckRequest returns a *SizeError if an encoded request of n bytes is over the limit.
func (l Limits) CheckRequest(n int) error {
	if n > l.MaxRequestBytes {
		return &SizeError{What: "request", Size: n, Limit: l.MaxRequestBytes}
	}
	return nil
}

// CallOptions returns the gRPC call options that cap gRPC's own send and receive message
// limits at l. Put them after any user options: for these options the last one wins.
func (l Limits) CallOptions() []grpc.CallOption {
	return []grpc.CallOption{
		grpc.MaxCallSendMsgSize(l.MaxRequestBytes),
		grpc.MaxCallRecvMsgSize(l.MaxResponseBytes),
	}
}

// DialOptions returns the dial options that cap, for the whole connection, the header lists
// accepted from the server at MaxMetadataBytes plus HeaderListSlack. Put them after any user
// options: for these options the last one wins. The message size limits are call options
// (CallOptions), which every call passes last; repeating them as the connection's default
// call options would only make grpc-go merge the two lists, an allocation per call.
func (l Limits) DialOptions() []grpc.DialOption {
	headers := min(max(int64(l.MaxMetadataBytes)+HeaderListSlack, 0), math.MaxUint32) // int64: 32-bit platforms too
	return []grpc.DialOption{
		grpc.WithMaxHeaderListSize(uint32(headers)),
	}
}

// SizeError reports a request, response or metadata over its limit.
type SizeError struct {
	What  string // "request", "response" or "metadata"
	Size  int    // bytes
	Limit int    // bytes
}

// Error returns a message naming the size and the limit.
func (e *SizeError) Error() string {
	return fmt.Sprintf("%s is %d bytes, over the %d-byte limit", e.What, e.Size, e.Limit)
}
