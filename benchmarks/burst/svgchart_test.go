package main

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"testing"
)

// svgNode is an element of an SVG document, with its attributes, its text and its children.
type svgNode struct {
	XMLName xml.Name
	Attrs   []xml.Attr `xml:",any,attr"`
	Text    string     `xml:",chardata"`
	Nodes   []svgNode  `xml:",any"`
}

func (n svgNode) attr(name string) string {
	for _, a := range n.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// all returns the elements under n, n included, for which keep is true, in document order.
func (n svgNode) all(keep func(svgNode) bool) []svgNode {
	var out []svgNode
	if keep(n) {
		out = append(out, n)
	}
	for _, c := range n.Nodes {
		out = append(out, c.all(keep)...)
	}
	return out
}

func named(name string) func(svgNode) bool {
	return func(n svgNode) bool { return n.XMLName.Local == name }
}

// TestChartSVG renders a panel with a reference line at 1, a row labelled on two lines and an
// item whose line runs from 0.5 to 2 with a filled mark at 1 and a hollow one at 1.5, and
// checks that the SVG puts each where the axis's tick labels are: the reference line and the
// filled mark at "1.0", the hollow mark at "1.5", the line's ends at "0.5" and "2.0"; that the
// item's group has its tip as its title; and that text is escaped.
func TestChartSVG(t *testing.T) {
	c := &chart{
		Title:  "a title & <more>",
		Legend: []legendEntry{{Text: "series", Colour: "#0072B2"}, {Text: "spread", Colour: "#555555", Line: true}},
		Note:   "a note",
		Panels: []panel{{Title: "panel", Axis: "ratio (×)", Ref: 1, Rows: []chartRow{{Label: "row\nsecond line", Items: []chartItem{
			{Colour: "#0072B2", Lo: 0.5, Hi: 2, Marks: []chartMark{{X: 1}, {X: 1.5, Hollow: true}}, Tip: "the item"},
		}}}}},
	}
	b := c.SVG()
	checkSVG(t, "chart", b)
	var root svgNode
	if err := xml.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	if ts := root.all(named("title")); len(ts) != 2 || ts[0].Text != c.Title || ts[1].Text != "the item" {
		t.Errorf("titles %+v, want the chart's and the item's", ts)
	}
	ticks := map[string]string{}
	texts := map[string]bool{}
	for _, n := range root.all(named("text")) {
		texts[n.Text] = true
		if n.attr("font-size") == "11" && n.attr("text-anchor") == "middle" {
			ticks[n.Text] = n.attr("x")
		}
	}
	for _, want := range []string{"0.5", "1.0", "1.5", "2.0"} {
		if ticks[want] == "" {
			t.Fatalf("no tick labelled %s: %v", want, ticks)
		}
	}
	for _, want := range []string{"row", "second line", "ratio (×)", "panel", "a note", "series", "spread"} {
		if !texts[want] {
			t.Errorf("no text %q", want)
		}
	}
	ref := root.all(func(n svgNode) bool { return n.attr("stroke-dasharray") != "" })
	if len(ref) != 1 || ref[0].attr("x1") != ticks["1.0"] || ref[0].attr("x2") != ticks["1.0"] {
		t.Errorf("reference line %+v, want one at x %s", ref, ticks["1.0"])
	}
	groups := root.all(named("g"))
	if len(groups) != 1 {
		t.Fatalf("%d groups, want the item's alone", len(groups))
	}
	marks := groups[0].all(named("circle"))
	if len(marks) != 2 || marks[0].attr("cx") != ticks["1.0"] || marks[0].attr("fill") != "#0072B2" ||
		marks[1].attr("cx") != ticks["1.5"] || marks[1].attr("fill") != "white" || marks[1].attr("stroke") != "#0072B2" {
		t.Errorf("marks %+v, want a filled one at x %s and a hollow one at x %s", marks, ticks["1.0"], ticks["1.5"])
	}
	if l := groups[0].all(named("line")); len(l) != 3 || l[0].attr("x1") != ticks["0.5"] || l[0].attr("x2") != ticks["2.0"] {
		t.Errorf("the item's line %+v, want it from x %s to x %s, with an upright at each end", l, ticks["0.5"], ticks["2.0"])
	}
}

// checkSVG checks that b is a well-formed XML document whose root is an svg element of the
// SVG namespace with a width, a height and a viewBox, a title first, and no script, link,
// style sheet or font of its own: nothing a viewer would fetch or run.
func checkSVG(t *testing.T, name string, b []byte) {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(b))
	var first, second *xml.StartElement
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Errorf("%s is not well-formed XML: %v", name, err)
			return
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		switch {
		case first == nil:
			first = &se
		case second == nil:
			second = &se
		}
		if slices.Contains([]string{"script", "style", "image", "use", "a", "foreignObject", "font", "font-face"}, se.Name.Local) {
			t.Errorf("%s has a <%s> element", name, se.Name.Local)
		}
		for _, a := range se.Attr {
			if a.Name.Local == "href" || strings.HasPrefix(a.Name.Local, "on") || strings.Contains(a.Value, "url(") {
				t.Errorf("%s: <%s> has %s=%q", name, se.Name.Local, a.Name.Local, a.Value)
			}
		}
	}
	if first == nil || first.Name.Local != "svg" || first.Name.Space != "http://www.w3.org/2000/svg" {
		t.Fatalf("%s: the root element is %+v, want svg in the SVG namespace", name, first)
	}
	attrs := map[string]string{}
	for _, a := range first.Attr {
		attrs[a.Name.Local] = a.Value
	}
	if attrs["width"] == "" || attrs["height"] == "" || attrs["viewBox"] != "0 0 "+attrs["width"]+" "+attrs["height"] {
		t.Errorf("%s: the svg element's width %q, height %q and viewBox %q do not agree", name, attrs["width"], attrs["height"], attrs["viewBox"])
	}
	if second == nil || second.Name.Local != "title" {
		t.Errorf("%s: the first element inside svg is %+v, want a title", name, second)
	}
}

func TestNewAxis(t *testing.T) {
	for _, c := range []struct {
		vs       []float64
		fromZero bool
		want     []float64
	}{
		{[]float64{0.8, 1.25, 1}, false, []float64{0.8, 0.9, 1, 1.1, 1.2, 1.3}},
		{[]float64{0.5, 2, 1}, false, []float64{0.5, 1, 1.5, 2}},
		{[]float64{33.3, 400}, true, []float64{0, 100, 200, 300, 400}},
		{[]float64{2500, 6250}, true, []float64{0, 2000, 4000, 6000, 8000}},
		{[]float64{1, 1}, false, []float64{0.9, 0.95, 1, 1.05, 1.1}},
		{[]float64{0}, true, []float64{0, 0.02, 0.04, 0.06, 0.08, 0.1}},
		{nil, true, []float64{0, 0.2, 0.4, 0.6, 0.8, 1}},
	} {
		a := newAxis(c.vs, c.fromZero)
		if len(a.ticks) != len(c.want) {
			t.Errorf("newAxis(%v, %v) ticks %v, want %v", c.vs, c.fromZero, a.ticks, c.want)
			continue
		}
		for i := range a.ticks {
			if math.Abs(a.ticks[i]-c.want[i]) > 1e-9 {
				t.Errorf("newAxis(%v, %v) ticks %v, want %v", c.vs, c.fromZero, a.ticks, c.want)
				break
			}
		}
		if a.lo != a.ticks[0] || a.hi != a.ticks[len(a.ticks)-1] {
			t.Errorf("newAxis(%v, %v) runs %v–%v, not from its first tick to its last: %v", c.vs, c.fromZero, a.lo, a.hi, a.ticks)
		}
	}
	for _, c := range []struct {
		step, t float64
		want    string
	}{{0.1, 0.3000000000004, "0.3"}, {0.05, 1, "1.00"}, {1000, 20000, "20,000"}, {5, 15, "15"}} {
		if got := (axis{step: c.step}).label(c.t); got != c.want {
			t.Errorf("label %v at step %v = %q, want %q", c.t, c.step, got, c.want)
		}
	}
}

func TestWrap(t *testing.T) {
	// At 10 px "one two" is 41.8 px wide and "three four" 49.6 px.
	got := wrap("one two three four five", 50, 10)
	if want := []string{"one two", "three four", "five"}; !slices.Equal(got, want) {
		t.Errorf("wrap = %q, want %q", got, want)
	}
}
