package dial

import (
	"encoding/pem"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzPEMBlocks checks that pemBlocks never panics, and that the blocks it accepts are those
// pem.Decode finds, in order: it refuses more than pem.Decode does, never less, and never
// decodes differently.
func FuzzPEMBlocks(f *testing.F) {
	f.Add([]byte("-----BEGIN CERTIFICATE-----\nAAECAwQFBgcICQ==\n-----END CERTIFICATE-----\n"))
	f.Add([]byte("text\n-----BEGIN A-----\nAA==\n-----END A-----\r\n-----BEGIN B-----\n-----END B-----"))
	f.Add([]byte("-----BEGIN A-----\n-----BEGIN A-----\nAA==\n-----END A-----\n"))
	f.Add([]byte("-----BEGIN A-----\nProc-Type: 4,ENCRYPTED\n\nAA==\n-----END A-----\n"))
	f.Add([]byte("-----BEGIN A-----\n*A==\n-----END A-----\n"))
	f.Add([]byte("-----BEGIN A\n-----END A-----\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		blocks, err := pemBlocks(data, pemInput{what: "roots"})
		if err != nil {
			require.Nil(t, blocks)
			return
		}
		rest := data
		for _, b := range blocks {
			var want *pem.Block
			want, rest = pem.Decode(rest)
			require.NotNil(t, want)
			require.Equal(t, want, b.Block)
		}
		next, _ := pem.Decode(rest)
		require.Nil(t, next, "pem.Decode finds a block that pemBlocks does not return")
	})
}
