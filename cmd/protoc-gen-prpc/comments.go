package main

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/compiler/protogen"
)

// wrapWidth is the width generated doc comments are wrapped at, "// " included.
const wrapWidth = 96

// writeDoc writes a doc comment into g, one paragraph per argument, with an empty comment line
// between paragraphs. A string paragraph is wrapped at wrapWidth, except a code block, whose
// lines start with a tab, and a heading, which starts with "# ". A protogen.Comments paragraph
// is a comment from the .proto, written as it is. Empty paragraphs are skipped.
func writeDoc(g *protogen.GeneratedFile, paras ...any) {
	first := true
	for _, para := range paras {
		var lines []string // as written, "//" included
		switch p := para.(type) {
		case string:
			var text []string
			switch {
			case p == "":
			case strings.HasPrefix(p, "\t"), strings.HasPrefix(p, "# "):
				text = strings.Split(p, "\n")
			default:
				text = wrap(p, wrapWidth-len("// "))
			}
			for _, line := range text {
				if line == "" {
					lines = append(lines, "//")
				} else {
					lines = append(lines, "// "+line)
				}
			}
		case protogen.Comments:
			if p != "" {
				// As protogen writes comments: "//" and the line, which starts with a space when
				// the .proto's comment does.
				for _, line := range strings.Split(strings.TrimSuffix(string(p), "\n"), "\n") {
					lines = append(lines, "//"+line)
				}
			}
		default:
			panic(fmt.Sprintf("protoc-gen-prpc: writeDoc paragraph of type %T", para))
		}
		if len(lines) == 0 {
			continue
		}
		if !first {
			g.P("//")
		}
		first = false
		for _, line := range lines {
			g.P(line)
		}
	}
}

// wrap splits text into lines of at most width bytes at spaces; a word longer than width gets a
// line of its own.
func wrap(text string, width int) []string {
	var lines []string
	line := ""
	for _, word := range strings.Fields(text) {
		switch {
		case line == "":
			line = word
		case len(line)+1+len(word) <= width:
			line += " " + word
		default:
			lines = append(lines, line)
			line = word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}
