package main

// A small SVG writer for the report's charts: dot-and-whisker panels, one row per category,
// a mark per figure and a line for its spread, on a linear axis with a title, a legend and a
// note. The SVG uses no script, no external reference and only the generic sans-serif font,
// and the same chart always gives the same bytes.

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// chart is a picture of some of a report's figures: a title, a legend, a note saying what
// the marks are, and panels, laid out Cols to a line.
type chart struct {
	Title  string
	Legend []legendEntry
	Note   string
	Cols   int
	Panels []panel
}

// legendEntry is one entry of a chart's legend: a mark as the chart draws it (a series' shape
// and colour, hollow or not) and what it stands for, or with Line a spread's line.
type legendEntry struct {
	Text   string
	Colour string
	Shape  markShape
	Hollow bool
	Line   bool
}

// panel is one axis of a chart: rows of items along a linear x axis labelled Axis (with its
// unit), from 0 if FromZero, with a dashed reference line at Ref unless it is 0.
type panel struct {
	Title    string
	Axis     string
	FromZero bool
	Ref      float64
	Rows     []chartRow
}

// chartRow is one category of a panel: its label, its lines split on "\n", and an item per
// series measured in it, drawn one under the other.
type chartRow struct {
	Label string
	Items []chartItem
}

// chartItem is one series' figures in a row: a line from Lo to Hi (none when they are equal)
// and its marks, in the series' colour and shape; Tip says them in words, as the item's
// title, which viewers show over it.
type chartItem struct {
	Colour string
	Shape  markShape
	Lo, Hi float64
	Marks  []chartMark
	Tip    string
}

// chartMark is a value marked on an item's line, filled or hollow.
type chartMark struct {
	X      float64
	Hollow bool
}

// markShape is the shape of a series' marks.
type markShape int

const (
	markCircle markShape = iota
	markSquare
	markTriangle
	markDiamond
)

// Sizes in px: the chart's width and margin, the text sizes, the height of an item and the
// space between panels.
const (
	chartWidth  = 720.0
	chartMargin = 16.0
	titleSize   = 15.0
	textSize    = 12.0
	noteSize    = 11.0
	itemHeight  = 13.0
	panelGap    = 24.0
)

// textWidth estimates the width of s in px at size px of a sans-serif font, a little wider
// than DejaVu Sans, the widest of those viewers fall back on, draws it: narrow letters and
// punctuation a third of the size, wide letters and capitals more than the rest.
func textWidth(s string, size float64) float64 {
	w := 0.0
	for _, r := range s {
		switch {
		case strings.ContainsRune("fijlrt.,:;'|() ", r):
			w += 0.36
		case strings.ContainsRune("mwMW×÷", r):
			w += 0.9
		case r >= 'A' && r <= 'Z':
			w += 0.72
		default:
			w += 0.64
		}
	}
	return w * size
}

// wrap splits s into lines that fit width px at size px, at spaces.
func wrap(s string, width, size float64) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && textWidth(line+" "+w, size) > width {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// px formats a coordinate to a tenth of a px, without a trailing ".0".
func px(v float64) string {
	return strings.TrimSuffix(strconv.FormatFloat(v, 'f', 1, 64), ".0")
}

var xmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")

// svgWriter accumulates an SVG document, an element a line.
type svgWriter struct{ b strings.Builder }

func (w *svgWriter) printf(format string, args ...any) {
	fmt.Fprintf(&w.b, format, args...)
	w.b.WriteByte('\n')
}

// text writes s at (x, y), anchored start, middle or end; attrs are further attributes.
func (w *svgWriter) text(x, y float64, anchor string, size float64, attrs, s string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	w.printf(`<text x="%s" y="%s" text-anchor="%s" font-size="%s"%s>%s</text>`, px(x), px(y), anchor, px(size), attrs, xmlEscaper.Replace(s))
}

func (w *svgWriter) line(x1, y1, x2, y2 float64, stroke string, width float64, attrs string) {
	if attrs != "" {
		attrs = " " + attrs
	}
	w.printf(`<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="%s"%s/>`, px(x1), px(y1), px(x2), px(y2), stroke, px(width), attrs)
}

// mark draws a mark of shape centred on (x, y) in colour, filled or hollow.
func (w *svgWriter) mark(x, y float64, shape markShape, colour string, hollow bool) {
	fill := colour
	if hollow {
		fill = "white"
	}
	paint := fmt.Sprintf(`fill="%s" stroke="%s" stroke-width="1.5"`, fill, colour)
	switch shape {
	case markSquare:
		w.printf(`<rect x="%s" y="%s" width="8" height="8" %s/>`, px(x-4), px(y-4), paint)
	case markTriangle:
		w.printf(`<path d="M%s %sL%s %sL%s %sZ" %s/>`, px(x), px(y-5), px(x+5), px(y+4), px(x-5), px(y+4), paint)
	case markDiamond:
		w.printf(`<path d="M%s %sL%s %sL%s %sL%s %sZ" %s/>`, px(x), px(y-5.5), px(x+5.5), px(y), px(x), px(y+5.5), px(x-5.5), px(y), paint)
	default:
		w.printf(`<circle cx="%s" cy="%s" r="4.5" %s/>`, px(x), px(y), paint)
	}
}

// spreadLine draws a line from x1 to x2 at y, with a short upright at each end.
func (w *svgWriter) spreadLine(x1, x2, y float64, colour string) {
	w.line(x1, y, x2, y, colour, 1.5, "")
	w.line(x1, y-3, x1, y+3, colour, 1.5, "")
	w.line(x2, y-3, x2, y+3, colour, 1.5, "")
}

// SVG renders the chart as a standalone SVG document.
func (c *chart) SVG() []byte {
	var body svgWriter
	y := chartMargin - 4
	for _, l := range wrap(c.Title, chartWidth-2*chartMargin, titleSize) {
		y += titleSize + 4
		body.text(chartMargin, y, "start", titleSize, `font-weight="bold"`, l)
	}
	y += 10
	y = c.drawLegend(&body, y) + 4
	for _, l := range wrap(c.Note, chartWidth-2*chartMargin, noteSize) {
		y += noteSize + 3
		body.text(chartMargin, y, "start", noteSize, `fill="#444"`, l)
	}
	y += 16
	cols := max(c.Cols, 1)
	pw := (chartWidth - 2*chartMargin - float64(cols-1)*panelGap) / float64(cols)
	for i := 0; i < len(c.Panels); i += cols {
		h := 0.0
		for j := i; j < min(i+cols, len(c.Panels)); j++ {
			h = max(h, c.Panels[j].draw(&body, chartMargin+float64(j-i)*(pw+panelGap), y, pw))
		}
		y += h + panelGap
	}
	height := math.Ceil(y - panelGap + chartMargin)
	var w svgWriter
	w.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="%s">`,
		px(chartWidth), px(height), px(chartWidth), px(height), px(textSize))
	w.printf(`<title>%s</title>`, xmlEscaper.Replace(c.Title))
	w.printf(`<rect width="100%%" height="100%%" fill="white"/>`)
	w.b.WriteString(body.b.String())
	w.printf(`</svg>`)
	return []byte(w.b.String())
}

// drawLegend draws the legend's entries from y down, wrapping them to the chart's width, and
// returns where it ends.
func (c *chart) drawLegend(w *svgWriter, y float64) float64 {
	if len(c.Legend) == 0 {
		return y
	}
	y += 14
	x := chartMargin
	for _, e := range c.Legend {
		wide := 26 + textWidth(e.Text, textSize)
		if x > chartMargin && x+wide > chartWidth-chartMargin {
			x, y = chartMargin, y+18
		}
		if e.Line {
			w.spreadLine(x, x+18, y-4, e.Colour)
		} else {
			w.mark(x+9, y-4, e.Shape, e.Colour, e.Hollow)
		}
		w.text(x+24, y, "start", textSize, "", e.Text)
		x += wide + 14
	}
	return y
}

// draw draws the panel with its top left corner at (x, y), w px wide, and returns its height.
func (p *panel) draw(w *svgWriter, x, y, width float64) float64 {
	titles := wrap(p.Title, width, textSize+1)
	for i, l := range titles {
		w.text(x, y+titleSize-2+float64(i)*(textSize+4), "start", textSize+1, `font-weight="bold"`, l)
	}
	labelW, slots, lines := 0.0, 1, 1
	for _, r := range p.Rows {
		for _, l := range strings.Split(r.Label, "\n") {
			labelW = max(labelW, textWidth(l, textSize))
		}
		slots = max(slots, len(r.Items))
		lines = max(lines, strings.Count(r.Label, "\n")+1)
	}
	rowH := max(float64(slots)*itemHeight+8, float64(lines)*15+6)
	top := y + 24 + float64(max(len(titles)-1, 0))*(textSize+4)
	left, right := x+labelW+10, x+width-14
	bottom := top + float64(len(p.Rows))*rowH
	ax := newAxis(p.values(), p.FromZero)
	// Marks at either end of the axis stay clear of the plot's edges.
	const pad = 8
	at := func(v float64) float64 { return left + pad + (v-ax.lo)/(ax.hi-ax.lo)*(right-left-2*pad) }

	for i := range p.Rows {
		if i%2 == 1 {
			w.printf(`<rect x="%s" y="%s" width="%s" height="%s" fill="#f2f2f2"/>`, px(x), px(top+float64(i)*rowH), px(right-x), px(rowH))
		}
	}
	for _, t := range ax.ticks {
		w.line(at(t), top, at(t), bottom, "#d9d9d9", 1, "")
		w.text(at(t), bottom+15, "middle", noteSize, "", ax.label(t))
	}
	w.line(left, bottom, right, bottom, "#777", 1, "")
	w.text((left+right)/2, bottom+32, "middle", textSize, "", p.Axis)
	if p.Ref != 0 {
		w.line(at(p.Ref), top-4, at(p.Ref), bottom, "#333", 1.2, `stroke-dasharray="5 3"`)
	}
	for i, r := range p.Rows {
		rowTop := top + float64(i)*rowH
		ls := strings.Split(r.Label, "\n")
		ly := rowTop + rowH/2 - float64(len(ls)-1)*15/2 + 4
		for j, l := range ls {
			w.text(left-8, ly+float64(j)*15, "end", textSize, "", l)
		}
		iy := rowTop + (rowH-float64(len(r.Items))*itemHeight)/2 + itemHeight/2
		for j, it := range r.Items {
			cy := iy + float64(j)*itemHeight
			w.printf(`<g><title>%s</title>`, xmlEscaper.Replace(it.Tip))
			if it.Hi > it.Lo {
				w.spreadLine(at(it.Lo), at(it.Hi), cy, it.Colour)
			}
			for _, m := range it.Marks {
				w.mark(at(m.X), cy, it.Shape, it.Colour, m.Hollow)
			}
			w.printf(`</g>`)
		}
	}
	return bottom + 38 - y
}

// values returns every value the panel shows: its items' lines and marks, and its reference.
func (p *panel) values() []float64 {
	var vs []float64
	if p.Ref != 0 {
		vs = append(vs, p.Ref)
	}
	for _, r := range p.Rows {
		for _, it := range r.Items {
			vs = append(vs, it.Lo, it.Hi)
			for _, m := range it.Marks {
				vs = append(vs, m.X)
			}
		}
	}
	return vs
}

// axis is a linear axis from lo to hi, with its ticks step apart.
type axis struct {
	lo, hi, step float64
	ticks        []float64
}

// newAxis returns an axis over vs, from 0 if fromZero: its ends are the ticks next outside
// the values, at most six steps apart, each step 1, 2 or 5 times a power of ten.
func newAxis(vs []float64, fromZero bool) axis {
	lo, hi := 0.0, 1.0
	if len(vs) > 0 {
		lo, hi = slices.Min(vs), slices.Max(vs)
	}
	if fromZero {
		lo = min(lo, 0)
	}
	if pad := max(math.Abs(lo), math.Abs(hi), 1) / 10; hi-lo < pad/1e6 {
		if lo != 0 || !fromZero {
			lo -= pad
		}
		hi += pad
	}
	raw := (hi - lo) / 5
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := 10 * mag
	for _, m := range []float64{1, 2, 5} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	a := axis{lo: math.Floor(lo/step+1e-9) * step, hi: math.Ceil(hi/step-1e-9) * step, step: step}
	for t := a.lo; t <= a.hi+step/2; t += step {
		a.ticks = append(a.ticks, math.Round(t/step)*step)
	}
	return a
}

// label formats tick t with as many decimals as the step needs, and commas in thousands.
func (a axis) label(t float64) string {
	decimals := max(0, int(-math.Floor(math.Log10(a.step)+1e-9)))
	if decimals == 0 {
		return thousands(int(math.Round(t)))
	}
	return strconv.FormatFloat(t, 'f', decimals, 64)
}
