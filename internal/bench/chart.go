package bench

import (
	"fmt"
	"html"
	"io"
	"slices"
	"strings"
)

// Chart geometry, in SVG user units.
const (
	chartWidth    = 980
	chartLabelW   = 150 // run names
	chartBarMax   = 560 // longest bar
	chartBarH     = 14
	chartGroupGap = 12
	chartTitleH   = 28
)

var chartColors = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#b07aa1"}

// chartPanels are the metrics charted, one panel each; a panel without
// rows (no restart was measured, say) is left out.
var chartPanels = []struct{ metric, title string }{
	{"ops/s", "Throughput, ops/s (higher is better)"},
	{"p99 us", "p99 latency, microseconds (lower is better)"},
	{"ready_ms", "Restart, ms until a new session reads / (lower is better)"},
}

// WriteSVG draws the throughput and p99 latency of every run, and the
// restart time if measured, as grouped horizontal bars: one bar per target
// at its median with a whisker for the min-max range, and "no result" for
// a target that has none for that run (every round failed, or it was not
// run). Bars are scaled per run (the longest bar of a group is the group's
// largest value), since runs differ by orders of magnitude; the numbers
// are printed beside them.
func (c *Comparison) WriteSVG(w io.Writer) error {
	var body strings.Builder
	y := 40
	fmt.Fprintf(&body, `<text x="10" y="22" font-size="16" font-weight="bold">%s</text>`+"\n",
		html.EscapeString(fmt.Sprintf("%s vs %s: medians with min-max range", c.Candidate, c.Baseline)))
	y = c.svgLegend(&body, y)
	fmt.Fprintf(&body, `<text x="10" y="%d" fill="#555">%s</text>`+"\n", y+4, html.EscapeString(fmt.Sprintf(
		"ratio = %s / %s median; (+) better, (-) worse for %s. Bars are scaled per run.", c.Candidate, c.Baseline, c.Candidate)))
	y += 16
	for _, p := range chartPanels {
		y = c.svgPanel(&body, p.metric, p.title, y)
	}
	_, err := fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n"+
		`<rect width="100%%" height="100%%" fill="white"/>`+"\n%s</svg>\n", chartWidth, y+10, chartWidth, y+10, body.String())
	return err
}

// svgLegend draws one swatch per target and returns the next y.
func (c *Comparison) svgLegend(b *strings.Builder, y int) int {
	x := 10
	for i, t := range c.Targets {
		fmt.Fprintf(b, `<rect x="%d" y="%d" width="12" height="12" fill="%s"/>`, x, y-10, chartColors[i%len(chartColors)])
		fmt.Fprintf(b, `<text x="%d" y="%d">%s</text>`+"\n", x+16, y, html.EscapeString(t))
		x += 30 + 8*len(t)
	}
	return y + 16
}

// svgPanel draws one metric's groups and returns the next y; a metric
// without rows draws nothing.
func (c *Comparison) svgPanel(b *strings.Builder, metricName, title string, y int) int {
	if !slices.ContainsFunc(c.Rows, func(r Row) bool { return r.Metric == metricName }) {
		return y
	}
	y += chartTitleH
	fmt.Fprintf(b, `<text x="10" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", y-8, html.EscapeString(title))
	for _, r := range c.Rows {
		if r.Metric != metricName {
			continue
		}
		top := 0.0
		for _, s := range r.ByTarget {
			top = max(top, s.Max, s.Median)
		}
		if top <= 0 {
			top = 1
		}
		groupH := len(c.Targets) * chartBarH
		fmt.Fprintf(b, `<text x="10" y="%d">%s</text>`+"\n", y+groupH/2+4, html.EscapeString(r.Name))
		if r.Ratio != 0 {
			fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n",
				chartWidth-10, y+groupH/2+4, html.EscapeString("ratio "+formatRatio(r)))
		}
		for i, t := range c.Targets {
			if s, ok := r.ByTarget[t]; ok {
				svgBar(b, y+i*chartBarH, s, top, chartColors[i%len(chartColors)])
			} else {
				fmt.Fprintf(b, `<text x="%d" y="%d" fill="#999">%s</text>`+"\n",
					chartLabelW+4, y+i*chartBarH+chartBarH-3, html.EscapeString(t+": no result"))
			}
		}
		y += groupH + chartGroupGap
	}
	return y
}

// svgBar draws one bar with its whisker and label at row top y.
func svgBar(b *strings.Builder, y int, s Stats, top float64, color string) {
	scale := func(v float64) float64 { return float64(chartLabelW) + v/top*chartBarMax }
	x0 := float64(chartLabelW)
	mid := float64(y) + chartBarH/2
	fmt.Fprintf(b, `<rect x="%.1f" y="%d" width="%.1f" height="%d" fill="%s"/>`,
		x0, y+1, scale(s.Median)-x0, chartBarH-2, color)
	lo, hi := scale(s.Min), scale(s.Max)
	fmt.Fprintf(b, `<path d="M%.1f %.1fH%.1fM%.1f %.1fV%.1fM%.1f %.1fV%.1f" stroke="#333" fill="none"/>`,
		lo, mid, hi, lo, mid-4, mid+4, hi, mid-4, mid+4)
	fmt.Fprintf(b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", max(hi, scale(s.Median))+6, mid+4, html.EscapeString(s.String()))
}
