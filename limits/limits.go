// Package limits holds prpc's size limits, with their defaults and bounds, and the errors
// that name a limit a call broke.
//
// A program sets Limits through reactor.Config.Limits; the reactor validates them once, in
// reactor.New (Validate tells a program the same beforehand), and applies them to every call:
// the request's size and the request metadata before anything is sent, the response's size
// through gRPC's own limit, received header blocks for the whole connection, and the response
// metadata a call keeps. A call that breaks a limit fails with calls.ErrTooLarge, and its
// error's message names the Limits field that sets the limit; one whose request metadata
// breaks gRPC's rules fails with calls.ErrInvalidArgument, naming the key.
package limits

import (
	"fmt"
)

// Defaults, taken from pRPC, but for DefaultMaxReceivedHeaderBytes (pRPC leaves it to the
// transport): generous enough for a server that puts a stack trace in its status message or
// sends rich error details, so that such a response fails at most its own call (see
// Limits.MaxReceivedHeaderBytes), and prpc's own choice rather than whatever grpc-go's
// default is at the time (it plans to lower it to 8 KB).
const (
	DefaultMaxRequestBytes        = 4 << 20  // 4 MiB
	DefaultMaxResponseBytes       = 4 << 20  // 4 MiB
	DefaultMaxMetadataBytes       = 32 << 10 // 32 KiB
	DefaultMaxReceivedHeaderBytes = 1 << 20  // 1 MiB
)

// Bounds of the limits. Messages above 1 GiB are far beyond anything a game server should
// move in one unary call, and HTTP/2 peers and proxies commonly refuse header blocks well
// below 1 MiB. Received header blocks are bounded at grpc-go's own default of 16 MiB.
const (
	MaxMessageLimit        = 1 << 30  // upper bound of MaxRequestBytes and MaxResponseBytes
	MaxMetadataLimit       = 1 << 20  // upper bound of MaxMetadataBytes
	MaxReceivedHeaderLimit = 16 << 20 // upper bound of MaxReceivedHeaderBytes
)

// headerListSlack is the least MaxReceivedHeaderBytes must exceed MaxMetadataBytes by: room
// for the headers gRPC itself sends with the metadata (status, message, content-type, …).
const headerListSlack = 8 << 10

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
	//
	// It also bounds the response metadata a call keeps: a response header or trailer
	// over it, counted the same way, is dropped whole and replaced by an empty metadata.MD
	// (never cut to fit), as pRPC does with status metadata over its maxMetadataBytes, and the
	// reactor logs a warning naming the method and the sizes. The call's outcome is
	// unchanged: a response is still delivered, and a failure keeps its status code, message
	// and details, which travel in its status, not in its trailer.
	MaxMetadataBytes int
	// MaxReceivedHeaderBytes bounds each header or trailer block received from the server,
	// counted as HPACK counts header lists (see MaxMetadataBytes). It is advertised to the
	// server (HTTP/2 SETTINGS_MAX_HEADER_LIST_SIZE) and enforced by gRPC's HTTP/2 reader for
	// the whole connection, before prpc sees anything: a block over it fails its call with
	// Internal at best, and ends the connection, failing every call in flight on it with
	// Unavailable, when one field is larger than the limit or the block goes on in further
	// frames. So it is generous: blocks up to it fail at most their own call, and
	// MaxMetadataBytes then decides what the call keeps. (A gRPC server that honours the
	// setting resets the stream of a response over it instead, failing that call alone with
	// Internal; its real status is lost.)
	//
	// Each invoker lane may hold a header and a trailer of up to this size while a call
	// runs, so received metadata is bounded by Workers × BatchSize × 2 ×
	// MaxReceivedHeaderBytes, counted as HPACK counts, plus the per-entry overhead of Go's
	// maps. With reactor.Config.Conn, the caller's connection enforces its own limit (set it
	// with grpc.WithMaxHeaderListSize); prpc still drops metadata over MaxMetadataBytes.
	// Default 1 MiB; at least MaxMetadataBytes + 8 KiB (room for the headers gRPC sends
	// itself), at most 16 MiB.
	MaxReceivedHeaderBytes int
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
	if l.MaxReceivedHeaderBytes == 0 {
		l.MaxReceivedHeaderBytes = DefaultMaxReceivedHeaderBytes
	}
	return l
}

// Validate returns an error naming the first field outside its bounds. Zero fields are valid:
// they mean the default, except a zero MaxReceivedHeaderBytes whose default is below its
// lower bound (MaxMetadataBytes near its maximum): it must then be set.
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
	least := l.WithDefaults().MaxMetadataBytes + headerListSlack
	switch v := l.MaxReceivedHeaderBytes; {
	case v == 0 && DefaultMaxReceivedHeaderBytes < least:
		return fmt.Errorf("prpc: Limits.MaxReceivedHeaderBytes is unset; its default, %d, is below MaxMetadataBytes + %d, %d; set it",
			DefaultMaxReceivedHeaderBytes, headerListSlack, least)
	case v < 0 || v > MaxReceivedHeaderLimit || v != 0 && v < least:
		return fmt.Errorf("prpc: Limits.MaxReceivedHeaderBytes is %d; must be between MaxMetadataBytes + %d, %d, and %d (0 means the default, %d)",
			v, headerListSlack, least, MaxReceivedHeaderLimit, DefaultMaxReceivedHeaderBytes)
	}
	return nil
}
