package limitcheck

import (
	"encoding/base64"
	"fmt"
	"strings"

	"google.golang.org/grpc/metadata"
)

// headerEntryOverhead is the per-entry overhead HPACK counts for header list sizes (RFC 7541
// §4.1), which MetadataSize counts too.
const headerEntryOverhead = 32

// reserved lists the keys an application may not send: gRPC and HTTP/2 own them, and
// grpc-go drops some silently, fails the call on others or makes the server reset the stream.
var reserved = map[string]bool{
	"content-type":      true,
	"te":                true,
	"connection":        true,
	"user-agent":        true,
	"host":              true,
	"keep-alive":        true,
	"proxy-connection":  true,
	"transfer-encoding": true,
	"upgrade":           true,
}

// MetadataError reports metadata that breaks a rule. It names the key, never the value, since
// values may be secrets.
type MetadataError struct {
	Key    string // the key as given, before lowercasing
	Reason string // the rule it breaks, for example "is reserved for gRPC and HTTP/2"
}

// Error returns a message naming the key and the rule.
func (e *MetadataError) Error() string {
	return fmt.Sprintf("metadata key %q: %s", e.Key, e.Reason)
}

// NormalizeMetadata checks md against gRPC's metadata rules and returns a copy with lowercase
// keys, or nil for empty metadata. Rules: keys are 1 or more of a–z, A–Z, 0–9, '-', '_', '.';
// keys that are equal after lowercasing are rejected, as are reserved keys (those starting
// with "grpc-" or ':', the HTTP/2 pseudo-headers, and the HTTP/2 connection and transport
// headers); each key has at least one
// value; values of keys not ending in "-bin" are printable ASCII (0x20–0x7E); "-bin" values
// may hold any bytes. A rule broken gives a *MetadataError; a total size (see MetadataSize)
// over maxBytes gives a *SizeError naming Limits.MaxMetadataBytes, the limit the reactor
// passes as maxBytes. It costs one pass over md and allocates the copy: a map, and a slice
// per key.
func NormalizeMetadata(md metadata.MD, maxBytes int) (metadata.MD, error) {
	if len(md) == 0 {
		return nil, nil
	}
	out := make(metadata.MD, len(md))
	size := 0
	for key, values := range md {
		lower := strings.ToLower(key)
		if err := checkKey(key, lower); err != nil {
			return nil, err
		}
		if _, dup := out[lower]; dup {
			return nil, &MetadataError{Key: key, Reason: "collides with another key after lowercasing"}
		}
		if len(values) == 0 {
			return nil, &MetadataError{Key: key, Reason: "has no values"}
		}
		bin := strings.HasSuffix(lower, "-bin")
		for _, v := range values {
			if !bin && !printableASCII(v) {
				return nil, &MetadataError{Key: key, Reason: "value has a byte outside printable ASCII (use a key ending in -bin for binary values)"}
			}
			size += valueSize(lower, v, bin)
		}
		out[lower] = append([]string(nil), values...)
	}
	if size > maxBytes {
		return nil, &SizeError{What: "metadata", Field: "MaxMetadataBytes", Size: size, Limit: maxBytes}
	}
	return out, nil
}

// MetadataSize returns the size of md as counted against MaxMetadataBytes:
// Σ len(key) + len(value) + 32 per value (HPACK's per-entry overhead, RFC 7541 §4.1), with
// values of "-bin" keys counted after base64.
func MetadataSize(md metadata.MD) int {
	size := 0
	for key, values := range md {
		bin := strings.HasSuffix(strings.ToLower(key), "-bin")
		for _, v := range values {
			size += valueSize(key, v, bin)
		}
	}
	return size
}

func valueSize(key, v string, bin bool) int {
	n := len(v)
	if bin {
		n = base64.RawStdEncoding.EncodedLen(len(v))
	}
	return len(key) + n + headerEntryOverhead
}

func checkKey(key, lower string) error {
	if key == "" {
		return &MetadataError{Key: key, Reason: "is empty"}
	}
	if key[0] == ':' { // before the characters: the colon is what makes it reserved
		return &MetadataError{Key: key, Reason: pseudoHeaderReason(lower)}
	}
	for i := 0; i < len(key); i++ { // the key itself: ToLower maps some non-ASCII runes to ASCII
		c := key[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return &MetadataError{Key: key, Reason: "has a character outside a-z, A-Z, 0-9, '-', '_' and '.'"}
		}
	}
	if strings.HasPrefix(lower, "grpc-") || reserved[lower] {
		return &MetadataError{Key: key, Reason: "is reserved for gRPC and HTTP/2"}
	}
	return nil
}

// pseudoHeaderReason says why a key starting with ':' is rejected: grpc-go drops HTTP/2
// pseudo-headers from a call's metadata without a word, and sets them itself.
func pseudoHeaderReason(lower string) string {
	const reason = "is reserved for gRPC and HTTP/2 (an HTTP/2 pseudo-header, which grpc-go would drop)"
	if lower == ":authority" {
		return reason + "; set a call's authority with the call option grpc.CallAuthority"
	}
	return reason
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return false
		}
	}
	return true
}
