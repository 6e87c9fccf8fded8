package reactor_test

import "encoding/pem"

// pemBodyLines returns the base64 lines of every PEM block in b: the key material an error
// must never quote.
func pemBodyLines(b []byte) []string {
	var out []string
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return out
		}
		enc := pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: block.Bytes})
		lines := splitLines(string(enc))
		out = append(out, lines[1:len(lines)-1]...) // without BEGIN and END
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	if start < len(s) {
		out = append(out, s[start:])
	}
	return out
}
