package dial

import (
	"bytes"
	"encoding/base64"
	"encoding/pem"
)

// pemBlock is a decoded PEM block and the line of its BEGIN line, counted from 1.
type pemBlock struct {
	*pem.Block
	line int
}

var (
	pemBegin = []byte("-----BEGIN ")
	pemEnd   = []byte("-----END ")
)

// pemBlocks returns the PEM blocks in data, in order. Text before a block is skipped, as
// pem.Decode and OpenSSL skip it (bundles often describe each certificate there), but the
// error names what is wrong, the input and the line, with none of the block's content, if
// data holds no block, if a block does not decode (no END line, base64 that does not decode,
// or anything else pem.Decode refuses: it would skip such a block silently), or if text
// follows the last block.
func pemBlocks(data []byte, in pemInput) ([]pemBlock, error) {
	var blocks []pemBlock
	for off := 0; ; {
		start := nextPEMLine(data, off, pemBegin)
		if start < 0 {
			if len(bytes.TrimSpace(data[off:])) == 0 {
				break
			}
			if len(blocks) == 0 {
				return nil, in.errorf("no PEM block found (no line starts with %q)", pemBegin)
			}
			text := off + len(data[off:]) - len(bytes.TrimLeft(data[off:], " \t\r\n"))
			return nil, in.errorf("the text after the last PEM block, from line %d, is not PEM", lineOf(data, text))
		}
		line := lineOf(data, start)
		end := nextPEMLine(data, start+1, pemEnd)
		if next := nextPEMLine(data, start+1, pemBegin); end < 0 || next >= 0 && next < end {
			hint := "is it cut short?"
			if bytes.Contains(data[start:], []byte(`\n`)) {
				hint = `it holds the characters \n where line breaks belong`
			}
			return nil, in.errorf("PEM block %d (line %d%s) has no END line: %s", len(blocks)+1, line, pemType(data[start:lineEnd(data, start)]), hint)
		}
		after := lineEnd(data, end)
		block, _ := pem.Decode(data[start:after])
		if block == nil {
			return nil, in.errorf("PEM block %d (line %d) is malformed: %s", len(blocks)+1, line, pemFault(data[start:after]))
		}
		blocks = append(blocks, pemBlock{block, line})
		off = after
	}
	if len(blocks) == 0 {
		return nil, in.errorf("no PEM block found (the input is empty)")
	}
	return blocks, nil
}

// nextPEMLine returns the offset of the first line of data, at or after off, that starts with
// prefix, or -1.
func nextPEMLine(data []byte, off int, prefix []byte) int {
	for off < len(data) {
		if bytes.HasPrefix(data[off:], prefix) && (off == 0 || data[off-1] == '\n') {
			return off
		}
		i := bytes.IndexByte(data[off:], '\n')
		if i < 0 {
			return -1
		}
		off += i + 1
	}
	return -1
}

// lineEnd returns the offset just after the line that holds offset off, newline included.
func lineEnd(data []byte, off int) int {
	if i := bytes.IndexByte(data[off:], '\n'); i >= 0 {
		return off + i + 1
	}
	return len(data)
}

// lineOf returns the line, counted from 1, that holds offset off.
func lineOf(data []byte, off int) int {
	return bytes.Count(data[:off], []byte{'\n'}) + 1
}

// pemType returns ", " and the type named by a block's BEGIN line, or "" if the line is not
// well formed or the type is not of capital letters, digits and spaces (at most 40): a
// malformed line may hold what it should not show.
func pemType(beginLine []byte) string {
	typ, _ := bytes.CutPrefix(bytes.TrimSpace(beginLine), pemBegin)
	typ, ok := bytes.CutSuffix(typ, []byte("-----"))
	if !ok || len(typ) == 0 || len(typ) > 40 {
		return ""
	}
	for _, c := range typ {
		if !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == ' ') {
			return ""
		}
	}
	return ", " + string(typ)
}

// pemFault says why pem.Decode refused block, which runs from its BEGIN line to its END line,
// without quoting its content.
func pemFault(block []byte) string {
	lines := bytes.Split(bytes.TrimRight(block, "\r\n"), []byte{'\n'})
	typ, _ := bytes.CutPrefix(bytes.TrimSpace(lines[0]), pemBegin)
	typ, ok := bytes.CutSuffix(typ, []byte("-----"))
	if !ok {
		return "its BEGIN line does not end in -----"
	}
	if want := append(append(append([]byte(nil), pemEnd...), typ...), "-----"...); !bytes.Equal(bytes.TrimSpace(lines[len(lines)-1]), want) {
		return "its END line does not match its BEGIN line"
	}
	var body []byte
	for _, l := range lines[1 : len(lines)-1] {
		if bytes.Contains(l, []byte{':'}) {
			return "it does not decode (its headers may be malformed)"
		}
		body = append(body, bytes.TrimSpace(l)...)
	}
	if _, err := base64.StdEncoding.DecodeString(string(body)); err != nil {
		return "its base64 does not decode: " + err.Error()
	}
	return "it does not decode"
}
