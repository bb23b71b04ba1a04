package benchrun

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

var barColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1"}

// WriteSVG draws the report as a bar chart: one panel per operation (and
// payload size, sidecar, layout and backend when those vary), one group of
// bars per fsync policy, one bar per batch size, height msgs/s on a log
// scale. A black tick on each bar marks the raw baseline's msgs/s.
func (r *Report) WriteSVG(w io.Writer) error {
	type panel struct {
		title  string
		fsyncs []string
		bars   map[string][]Result // by fsync
	}
	var panels []*panel
	byKey := map[string]*panel{}
	var batches []int
	seenBatch := map[int]bool{}
	lo, hi := math.Inf(1), math.Inf(-1)
	vary := r.varying()
	for _, x := range r.Results {
		title := fmt.Sprintf("%s, %s payload", x.Op, FormatSize(x.PayloadBytes))
		if vary["sidecar"] {
			title += ", sidecar " + onOff(x.Sidecar)
		}
		if vary["layout"] {
			title += ", " + x.Layout
		}
		if vary["backend"] {
			title += ", backend " + x.Backend
		}
		p := byKey[title]
		if p == nil {
			p = &panel{title: title, bars: map[string][]Result{}}
			byKey[title] = p
			panels = append(panels, p)
		}
		if _, ok := p.bars[x.Fsync]; !ok {
			p.fsyncs = append(p.fsyncs, x.Fsync)
		}
		p.bars[x.Fsync] = append(p.bars[x.Fsync], x)
		if !seenBatch[x.BatchSize] {
			seenBatch[x.BatchSize] = true
			batches = append(batches, x.BatchSize)
		}
		for _, v := range []float64{x.MsgsPerSec, x.RawMsgsPerSec} {
			if v > 0 {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if len(panels) == 0 {
		lo, hi = 1, 10
	}
	dlo, dhi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dhi <= dlo {
		dhi = dlo + 1
	}
	colorOf := map[int]string{}
	for i, b := range batches {
		colorOf[b] = barColors[i%len(barColors)]
	}

	const (
		barW, barGap, groupGap = 26.0, 4.0, 30.0
		left, right, top       = 70.0, 20.0, 60.0
		plotH, panelGap        = 220.0, 70.0
	)
	maxGroups, maxBars := 1, 1
	for _, p := range panels {
		maxGroups = max(maxGroups, len(p.fsyncs))
		for _, f := range p.fsyncs {
			maxBars = max(maxBars, len(p.bars[f]))
		}
	}
	groupW := float64(maxBars)*(barW+barGap) - barGap
	plotW := float64(maxGroups)*(groupW+groupGap) + groupGap
	width := math.Max(left+plotW+right, 620) // room for the title lines
	height := top + float64(max(1, len(panels)))*(plotH+panelGap) + 10
	y := func(v float64) float64 {
		if v <= 0 {
			return plotH
		}
		t := (math.Log10(v) - dlo) / (dhi - dlo)
		return plotH - math.Max(0, math.Min(1, t))*plotH
	}

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", width, height, width, height)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	m := r.Machine
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">mqb bench: messages per second (log scale)</text>`+"\n", left)
	fmt.Fprintf(&b, `<text x="%.0f" y="34" fill="#555">%s on %s, %d msgs per round, median of %d rounds</text>`+"\n",
		left, esc(m.Dir), esc(m.FSType), r.Count, r.Rounds)
	// Legend.
	lx := left
	for _, bs := range batches {
		fmt.Fprintf(&b, `<rect x="%.0f" y="42" width="10" height="10" fill="%s"/><text x="%.0f" y="51">batch %d</text>`+"\n", lx, colorOf[bs], lx+14, bs)
		lx += 80
	}
	fmt.Fprintf(&b, `<line x1="%.0f" y1="47" x2="%.0f" y2="47" stroke="black" stroke-width="2"/><text x="%.0f" y="51">raw syscalls</text>`+"\n", lx, lx+12, lx+16)

	for pi, p := range panels {
		oy := top + float64(pi)*(plotH+panelGap) + 20
		fmt.Fprintf(&b, `<g transform="translate(%.0f,%.0f)">`+"\n", left, oy)
		fmt.Fprintf(&b, `<text x="0" y="-6" font-weight="bold">%s</text>`+"\n", esc(p.title))
		for d := dlo; d <= dhi; d++ {
			gy := y(math.Pow(10, d))
			fmt.Fprintf(&b, `<line x1="0" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#ddd"/>`, gy, plotW, gy)
			fmt.Fprintf(&b, `<text x="-6" y="%.1f" text-anchor="end">%s</text>`+"\n", gy+4, fmtRate(math.Pow(10, d)))
		}
		fmt.Fprintf(&b, `<line x1="0" y1="0" x2="0" y2="%.0f" stroke="#333"/><line x1="0" y1="%.0f" x2="%.0f" y2="%.0f" stroke="#333"/>`+"\n", plotH, plotH, plotW, plotH)
		for gi, f := range p.fsyncs {
			gx := groupGap + float64(gi)*(groupW+groupGap)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">fsync=%s</text>`+"\n", gx+groupW/2, plotH+16, esc(f))
			for bi, x := range p.bars[f] {
				bx := gx + float64(bi)*(barW+barGap)
				by := y(x.MsgsPerSec)
				fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.0f" height="%.1f" fill="%s"><title>%s %s batch=%d: %s msgs/s, %.2f x raw (%s msgs/s)</title></rect>`+"\n",
					bx, by, barW, plotH-by, colorOf[x.BatchSize], esc(x.Op), esc(x.Fsync), x.BatchSize, fmtRate(x.MsgsPerSec), x.RatioToRaw, fmtRate(x.RawMsgsPerSec))
				if x.RawMsgsPerSec > 0 {
					ry := y(x.RawMsgsPerSec)
					fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black" stroke-width="2"/>`+"\n", bx-2, ry, bx+barW+2, ry)
				}
				fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="9">%s</text>`+"\n", bx+barW/2, math.Min(by, y(x.RawMsgsPerSec))-4, shortRate(x.MsgsPerSec))
			}
		}
		b.WriteString("</g>\n")
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
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
