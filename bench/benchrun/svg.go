package benchrun

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

var barColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"}

// The chart's geometry, in pixels.
const (
	barW, barGap, groupGap = 26.0, 4.0, 30.0
	left, right, top       = 70.0, 20.0, 60.0
	plotH, panelGap        = 220.0, 70.0
)

// panel is one plot of the chart: the results of one operation (and
// payload size, sidecar, layout and backend when those vary), by fsync.
type panel struct {
	title  string
	fsyncs []string
	bars   map[string][]Result // by fsync
}

// chart is the laid-out bar chart of a report.
type chart struct {
	panels        []*panel
	batches       []int          // batch sizes in order of appearance
	colorOf       map[int]string // by batch size
	dlo, dhi      float64        // decades of the log scale
	groupW, plotW float64
	width, height float64
}

// WriteSVG draws the report as a bar chart: one panel per operation (and
// payload size, sidecar, layout and backend when those vary), one group of
// bars per fsync policy, one bar per batch size, height msgs/s on a log
// scale. A black tick on each bar marks the raw baseline's msgs/s.
func (r *Report) WriteSVG(w io.Writer) error {
	c := r.chart()
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", c.width, c.height, c.width, c.height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	m := r.Machine
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">mqb bench: messages per second (log scale)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%.0f" y="34" fill="#555">%s on %s, %s, median of %d rounds</text>`+"\n",
		left, esc(m.Dir), esc(m.FSType), esc(r.roundSize()), r.Rounds)
	// Legend.
	lx := left
	for _, bs := range c.batches {
		fmt.Fprintf(&b, `<rect x="%.0f" y="42" width="10" height="10" fill="%s"/><text x="%.0f" y="51">batch %d</text>`+"\n", lx, c.colorOf[bs], lx+14, bs)
		lx += 80
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="47" x2="%.0f" y2="47" stroke="black" stroke-width="2"/><text x="%.0f" y="51">raw syscalls</text>`+"\n", lx, lx+12, lx+16)
	for pi, p := range c.panels {
		c.writePanel(&b, pi, p)
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// chart groups the results into panels and sizes the chart.
func (r *Report) chart() *chart {
	c := &chart{colorOf: map[int]string{}}
	byKey := map[string]*panel{}
	lo, hi := math.Inf(1), math.Inf(-1)
	vary := r.varying()
	for _, x := range r.Results {
		title := panelTitle(x, vary)
		p := byKey[title]
		if p == nil {
			p = &panel{title: title, bars: map[string][]Result{}}
			byKey[title] = p
			c.panels = append(c.panels, p)
		}
		if _, ok := p.bars[x.Fsync]; !ok {
			p.fsyncs = append(p.fsyncs, x.Fsync)
		}
		p.bars[x.Fsync] = append(p.bars[x.Fsync], x)
		if _, ok := c.colorOf[x.BatchSize]; !ok {
			c.colorOf[x.BatchSize] = barColors[len(c.batches)%len(barColors)]
			c.batches = append(c.batches, x.BatchSize)
		}
		for _, v := range []float64{x.MsgsPerSec, x.RawMsgsPerSec} {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if len(c.panels) == 0 {
		lo, hi = 1, 10
	}
	c.dlo, c.dhi = math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if c.dhi <= c.dlo {
		c.dhi = c.dlo + 1
	}
	maxGroups, maxBars := 1, 1
	for _, p := range c.panels {
		maxGroups = max(maxGroups, len(p.fsyncs))
		for _, f := range p.fsyncs {
			maxBars = max(maxBars, len(p.bars[f]))
		}
	}
	c.groupW = float64(maxBars)*(barW+barGap) - barGap
	c.plotW = float64(maxGroups)*(c.groupW+groupGap) + groupGap
	c.width = math.Max(left+c.plotW+right, 620) // room for the title lines
	c.height = top + float64(max(1, len(c.panels)))*(plotH+panelGap) + 10
	return c
}

// panelTitle names the panel of x: its operation and payload size, and
// whichever of sidecar, layout and backend vary in the report.
func panelTitle(x Result, vary map[string]bool) string {
	title := fmt.Sprintf("%s, %s payload", x.Op, FormatSize(int64(x.PayloadBytes)))
	if vary["sidecar"] {
		title += ", sidecar " + onOff(x.Sidecar)
	}
	if vary["layout"] {
		title += ", " + x.Layout
	}
	if vary["backend"] {
		title += ", backend " + x.Backend
	}
	if x.Op == OpConsume {
		title += ", read " + readOf(x)
	}
	return title
}

// y is the height in a panel of v msgs/s on the log scale.
func (c *chart) y(v float64) float64 {
	if v <= 0 {
		return plotH
	}
	t := (math.Log10(v) - c.dlo) / (c.dhi - c.dlo)
	return plotH - math.Max(0, math.Min(1, t))*plotH
}

// writePanel draws panel number pi: its title, grid, axes and bars.
func (c *chart) writePanel(b *strings.Builder, pi int, p *panel) {
	oy := top + float64(pi)*(plotH+panelGap) + 20
	fmt.Fprintf(b, `<g transform="translate(%.0f,%.0f)">`+"\n", left, oy)
	fmt.Fprintf(b, `<text x="0" y="-6" font-weight="bold">%s</text>`+"\n", esc(p.title))
	for d := c.dlo; d <= c.dhi; d++ {
		gy := c.y(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="0" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`, gy, c.plotW, gy)
		fmt.Fprintf(b, `<text x="-6" y="%.1f" text-anchor="end">%s</text>`+"\n", gy+4, fmtRate(math.Pow(10, d)))
	}
	fmt.Fprintf(b, `<line x1="0" y1="0" x2="0" y2="%.0f" stroke="#333"/><line x1="0" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#333"/>`+"\n", plotH, plotH, c.plotW, plotH)
	for gi, f := range p.fsyncs {
		gx := groupGap + float64(gi)*(c.groupW+groupGap)
		fmt.Fprintf(b, `<text x="%.1f" y="%.0f" text-anchor="middle">fsync=%s</text>`+"\n", gx+c.groupW/2, plotH+16, esc(f))
		for bi, x := range p.bars[f] {
			c.writeBar(b, gx+float64(bi)*(barW+barGap), x)
		}
	}
	b.WriteString("</g>\n")
}

// writeBar draws the bar of x at bx, with its raw baseline's tick and its
// rate above it.
func (c *chart) writeBar(b *strings.Builder, bx float64, x Result) {
	by := c.y(x.MsgsPerSec)
	fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.1f" fill="%s"><title>%s %s batch=%d: %s msgs/s, %.2f x raw (%s msgs/s)</title></rect>`+"\n",
		bx, by, barW, plotH-by, c.colorOf[x.BatchSize], esc(x.Op), esc(x.Fsync), x.BatchSize, fmtRate(x.MsgsPerSec), x.RatioToRaw, fmtRate(x.RawMsgsPerSec))
	if x.RawMsgsPerSec > 0 {
		ry := c.y(x.RawMsgsPerSec)
		fmt.Fprintf(b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", bx-2, ry, bx+barW+2, ry)
	}
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%s</text>`+"\n", bx+barW/2, math.Min(by, c.y(x.RawMsgsPerSec))-4, shortRate(x.MsgsPerSec))
}

func esc(s string) string { return html.EscapeString(s) }

// shortRate writes 1234 as 1.2k and 1234567 as 1.2M.
func shortRate(v float64) string {
	switch {
	case v >= 1e6:
		return fmt.Sprintf("%.1fM", v/1e6)
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	}
	return fmt.Sprintf("%.0f", v)
}
