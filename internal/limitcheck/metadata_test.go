package limitcheck_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/metadata"

	"github.com/trixnew/prpc/internal/limitcheck"
	"github.com/trixnew/prpc/limits"
)

// secret is a value that must never appear in an error message.
const secret = "Bearer s3cr3t"

func TestNormalizeMetadataLowercasesAndCopies(t *testing.T) {
	in := metadata.MD{
		"X-Request-ID":  {"abc"},
		"Authorization": {secret},
		"x-multi":       {"1", "2", "3"},
		"Trace.Span_Id": {"7"},
		"X-Blob-Bin":    {"\x00\xff\r\n"},
	}
	out, err := limitcheck.NormalizeMetadata(in, limits.DefaultMaxMetadataBytes)
	require.NoError(t, err)
	require.Equal(t, metadata.MD{
		"x-request-id":  {"abc"},
		"authorization": {secret},
		"x-multi":       {"1", "2", "3"},
		"trace.span_id": {"7"},
		"x-blob-bin":    {"\x00\xff\r\n"},
	}, out)

	// The result shares nothing with the input.
	in["x-multi"][0] = "changed"
	in["Authorization"] = append(in["Authorization"], "more")
	in["X-New"] = []string{"new"}
	delete(in, "X-Request-ID")
	require.Equal(t, []string{"1", "2", "3"}, out["x-multi"])
	require.Equal(t, []string{secret}, out["authorization"])
	require.NotContains(t, out, "x-new")
	require.Contains(t, out, "x-request-id")
}

func TestNormalizeMetadataEmpty(t *testing.T) {
	for _, md := range []metadata.MD{nil, {}} {
		out, err := limitcheck.NormalizeMetadata(md, 0)
		require.NoError(t, err)
		require.Nil(t, out)
	}
}

func TestNormalizeMetadataRejects(t *testing.T) {
	tests := []struct {
		name    string
		md      metadata.MD
		wantKey []string // the error names one of these keys
	}{
		{"colliding keys", metadata.MD{"X-Key": {secret}, "x-key": {secret}}, []string{"X-Key", "x-key"}},
		{"colliding keys, three spellings", metadata.MD{"AB": {secret}, "ab": {secret}, "Ab": {secret}}, []string{"AB", "ab", "Ab"}},
		{"empty key", metadata.MD{"": {secret}}, []string{""}},
		{"key with space", metadata.MD{"x key": {secret}}, []string{"x key"}},
		{"key with colon", metadata.MD{"x:key": {secret}}, []string{"x:key"}},
		{"key with slash", metadata.MD{"x/key": {secret}}, []string{"x/key"}},
		{"key with non-ASCII", metadata.MD{"x-ké": {secret}}, []string{"x-ké"}},
		// strings.ToLower maps the Kelvin sign U+212A to ASCII 'k'.
		{"key with Kelvin sign", metadata.MD{"x-\u212Aey": {secret}}, []string{"x-\u212Aey"}},
		{"Kelvin sign colliding with k", metadata.MD{"x-\u212Aey": {secret}, "x-key": {secret}}, []string{"x-\u212Aey"}},
		{"key with NUL", metadata.MD{"x\x00": {secret}}, []string{"x\x00"}},
		{"grpc-foo", metadata.MD{"grpc-foo": {secret}}, []string{"grpc-foo"}},
		{"Grpc-Foo", metadata.MD{"Grpc-Foo": {secret}}, []string{"Grpc-Foo"}},
		{"grpc-timeout", metadata.MD{"grpc-timeout": {"1S"}}, []string{"grpc-timeout"}},
		{"grpc-status-details-bin", metadata.MD{"grpc-status-details-bin": {secret}}, []string{"grpc-status-details-bin"}},
		{"content-type", metadata.MD{"content-type": {secret}}, []string{"content-type"}},
		{"Content-Type", metadata.MD{"Content-Type": {secret}}, []string{"Content-Type"}},
		{"te", metadata.MD{"te": {"trailers"}}, []string{"te"}},
		{"connection", metadata.MD{"connection": {"close"}}, []string{"connection"}},
		{"user-agent", metadata.MD{"user-agent": {secret}}, []string{"user-agent"}},
		{"host", metadata.MD{"host": {secret}}, []string{"host"}},
		{":authority", metadata.MD{":authority": {secret}}, []string{":authority"}},
		{":path", metadata.MD{":path": {secret}}, []string{":path"}},
		{"transfer-encoding", metadata.MD{"transfer-encoding": {secret}}, []string{"transfer-encoding"}},
		{"no values", metadata.MD{"x-empty": {}}, []string{"x-empty"}},
		{"nil values", metadata.MD{"x-empty": nil}, []string{"x-empty"}},
		{"CR in value", metadata.MD{"x-v": {secret + "\r"}}, []string{"x-v"}},
		{"LF in value", metadata.MD{"x-v": {secret + "\nInjected: 1"}}, []string{"x-v"}},
		{"NUL in value", metadata.MD{"x-v": {secret + "\x00"}}, []string{"x-v"}},
		{"DEL in value", metadata.MD{"x-v": {secret + "\x7f"}}, []string{"x-v"}},
		{"tab in value", metadata.MD{"x-v": {secret + "\t"}}, []string{"x-v"}},
		{"non-ASCII in value", metadata.MD{"x-v": {secret + "é"}}, []string{"x-v"}},
		{"bad second value", metadata.MD{"x-v": {"ok", secret + "\n"}}, []string{"x-v"}},
		{"binary in key ending -bi", metadata.MD{"x-bi": {secret + "\xff"}}, []string{"x-bi"}},
		{"binary in key with -bin inside", metadata.MD{"x-bin-not": {secret + "\xff"}}, []string{"x-bin-not"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := limitcheck.NormalizeMetadata(tt.md, limits.DefaultMaxMetadataBytes)
			require.Error(t, err)
			require.Nil(t, out)
			var me *limitcheck.MetadataError
			require.True(t, errors.As(err, &me), "want *MetadataError, got %T: %v", err, err)
			require.Contains(t, tt.wantKey, me.Key)
			require.NotEmpty(t, me.Reason)
			require.NotContains(t, err.Error(), secret, "the error must not reveal the value")
			require.NotContains(t, err.Error(), "s3cr3t")
		})
	}
}

// TestNormalizeMetadataReservedReason: a reserved key is reported as reserved, whatever makes
// it so: a pseudo-header's colon is not reported as a bad character, and ":authority", which
// grpc-go would drop, points to the call option that sets it.
func TestNormalizeMetadataReservedReason(t *testing.T) {
	tests := []struct {
		key      string
		wantHint bool // the reason names grpc.CallAuthority
	}{
		{":authority", true},
		{":Authority", true},
		{":path", false},
		{":method", false},
		{":scheme", false},
		{":status", false},
		{":", false},
		{"grpc-timeout", false},
		{"Grpc-Status", false},
		{"content-type", false},
		{"host", false},
		{"te", false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			_, err := limitcheck.NormalizeMetadata(metadata.MD{tt.key: {"v"}}, limits.DefaultMaxMetadataBytes)
			var me *limitcheck.MetadataError
			require.ErrorAs(t, err, &me)
			require.Equal(t, tt.key, me.Key)
			require.Contains(t, me.Reason, "is reserved for gRPC and HTTP/2")
			require.NotContains(t, me.Reason, "character")
			if tt.wantHint {
				require.Contains(t, me.Reason, "grpc.CallAuthority")
			} else {
				require.NotContains(t, me.Reason, "CallAuthority")
			}
		})
	}
}

func TestNormalizeMetadataBinValues(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	tests := []struct {
		name string
		key  string
		vals []string
	}{
		{"every byte", "x-data-bin", []string{string(all)}},
		{"uppercase suffix", "X-Data-BIN", []string{"\r\n\x00\x7f"}},
		{"invalid UTF-8", "x-bin", []string{"\xff\xfe"}},
		{"empty value", "x-bin", []string{""}},
		{"several values", "a-bin", []string{"\x00", "\x01\x02"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := limitcheck.NormalizeMetadata(metadata.MD{tt.key: tt.vals}, limits.DefaultMaxMetadataBytes)
			require.NoError(t, err)
			require.Equal(t, tt.vals, out[strings.ToLower(tt.key)])
		})
	}
}

func TestMetadataSize(t *testing.T) {
	b64 := func(s string) int { return base64.RawStdEncoding.EncodedLen(len(s)) }
	tests := []struct {
		name string
		md   metadata.MD
		want int
	}{
		{"empty", nil, 0},
		{"one", metadata.MD{"x-a": {"abc"}}, 3 + 3 + 32},
		{"empty value", metadata.MD{"x-a": {""}}, 3 + 0 + 32},
		{"two values", metadata.MD{"x-a": {"abc", "de"}}, (3 + 3 + 32) + (3 + 2 + 32)},
		{"two keys", metadata.MD{"x-a": {"abc"}, "yy": {"z"}}, (3 + 3 + 32) + (2 + 1 + 32)},
		// Raw standard base64 without padding: 4 bytes encode to 6 characters, not 8.
		{"bin 4 bytes", metadata.MD{"k-bin": {"\x00\x01\x02\x03"}}, 5 + 6 + 32},
		{"bin 3 bytes", metadata.MD{"k-bin": {"abc"}}, 5 + 4 + 32},
		{"bin 1 byte", metadata.MD{"k-bin": {"\xff"}}, 5 + 2 + 32},
		{"bin uppercase key", metadata.MD{"K-BIN": {"\x00\x01\x02\x03\x04"}}, 5 + b64("\x00\x01\x02\x03\x04") + 32},
		{"bin and text", metadata.MD{"k-bin": {"12345678"}, "k": {"12345678"}}, (5 + 11 + 32) + (1 + 8 + 32)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.Equal(t, tt.want, limitcheck.MetadataSize(tt.md))
			if len(tt.md) == 0 {
				return
			}
			// Exactly at the limit passes; one byte less as the limit fails.
			out, err := limitcheck.NormalizeMetadata(tt.md, tt.want)
			require.NoError(t, err)
			require.Equal(t, tt.want, limitcheck.MetadataSize(out))

			out, err = limitcheck.NormalizeMetadata(tt.md, tt.want-1)
			require.Nil(t, out)
			var se *limitcheck.SizeError
			require.True(t, errors.As(err, &se), "want *SizeError, got %T: %v", err, err)
			require.Equal(t, limitcheck.SizeError{What: "metadata", Field: "MaxMetadataBytes", Size: tt.want, Limit: tt.want - 1}, *se)
			require.Equal(t, fmt.Sprintf("metadata is %d bytes, over the %d-byte limit (Limits.MaxMetadataBytes)", tt.want, tt.want-1), err.Error())
		})
	}
}

func TestNormalizeMetadataSizeErrorHidesValue(t *testing.T) {
	md := metadata.MD{"authorization": {secret + strings.Repeat("x", 100)}}
	_, err := limitcheck.NormalizeMetadata(md, 50)
	var se *limitcheck.SizeError
	require.True(t, errors.As(err, &se))
	require.NotContains(t, err.Error(), "s3cr3t")
}

// FuzzNormalizeMetadata checks that NormalizeMetadata never panics, and that whatever it
// accepts is lowercase, valid and within the limit, with the values unchanged.
func FuzzNormalizeMetadata(f *testing.F) {
	f.Add("x-key", "value", "X-Other", "v2", 1024)
	f.Add("X-Key", "a", "x-key", "b", 1024)
	f.Add("x-data-bin", "\x00\xff", "k", "\r\n", 1024)
	f.Add("grpc-timeout", "1S", "", "", 100)
	f.Add("x-\u212Aey", "v", "te", "trailers", 1024)
	f.Add("a", "b", "c", "d", 68)
	f.Add("a-bin", "\x00\x01\x02", "Authorization", "Bearer s3cr3t", 0)
	f.Fuzz(func(t *testing.T, k1, v1, k2, v2 string, maxBytes int) {
		in := metadata.MD{k1: {v1}}
		if k2 != k1 {
			in[k2] = []string{v2, v1}
		}
		out, err := limitcheck.NormalizeMetadata(in, maxBytes)
		if err != nil {
			var me *limitcheck.MetadataError
			var se *limitcheck.SizeError
			if !errors.As(err, &me) && !errors.As(err, &se) {
				t.Fatalf("error of type %T: %v", err, err)
			}
			require.Nil(t, out)
			return
		}
		require.Len(t, out, len(in))
		size := 0
		for key, vals := range out {
			require.NotEmpty(t, key)
			for i := 0; i < len(key); i++ {
				c := key[i]
				if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
					t.Fatalf("accepted key %q has byte %q", key, c)
				}
			}
			require.False(t, strings.HasPrefix(key, "grpc-"), "reserved key %q accepted", key)
			for _, r := range []string{"content-type", "te", "connection", "user-agent", "host"} {
				require.NotEqual(t, r, key)
			}
			require.NotEmpty(t, vals)
			bin := strings.HasSuffix(key, "-bin")
			for _, v := range vals {
				n := len(v)
				if bin {
					n = base64.RawStdEncoding.EncodedLen(len(v))
				} else {
					for i := 0; i < len(v); i++ {
						if v[i] < 0x20 || v[i] > 0x7e {
							t.Fatalf("accepted value with byte %#x for key %q", v[i], key)
						}
					}
				}
				size += len(key) + n + 32
			}
			// The values are those of the one input key that lowercases to key.
			found := 0
			for ik, iv := range in {
				if strings.ToLower(ik) == key {
					found++
					require.Equal(t, iv, vals)
				}
			}
			require.Equal(t, 1, found)
		}
		require.Equal(t, size, limitcheck.MetadataSize(out))
		require.LessOrEqual(t, size, maxBytes)
	})
}
