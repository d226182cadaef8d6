// Package plot draws a suite report (tickdb and its peers, internal/harness/suite)
// as an image: latency by percentile and throughput, side by side. It lives
// in the bench module so that gonum/plot stays out of tickdb's own
// dependencies; tickdb bench --json writes what `go run . --plot-json`
// here draws.
package plot

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/tickdb/tickdb/internal/harness/suite"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot size: two panels side by side, 1200×500 px in a PNG.
const (
	plotW, plotH = 12 * vg.Inch, 5 * vg.Inch
	plotDPI      = 100
)

// Write writes the report as one image to file, PNG or SVG by its extension
// (".png" or ".svg"), holding two panels side by side:
//
//   - "Latency by percentile": one line per result with a latency curve
//     in ns, not of bytes ("<metric> · <system>"), latency on a log axis against the
//     percentile on a log axis of nines (ninesX: 90% at 10, 99% at 100,
//     ...). The curve's last point, the max (percentile 100, which has no
//     finite x), is drawn one decade right of the point before it.
//   - "Throughput (rows/s, higher is better)": one group of bars per metric
//     measured in rows/s, one bar per system (tickdb, the peers, then the
//     limit) at its median, on a log axis; a missing result leaves a gap.
//
// A colour is a system in both panels; a dash pattern is a metric. A panel
// with nothing to draw gets a "no data" title instead.
func Write(r *suite.Report, file string) error {
	ext := strings.ToLower(filepath.Ext(file))
	if ext != ".png" && ext != ".svg" {
		return fmt.Errorf("plot: %s: unsupported extension %q, want .png or .svg", file, ext)
	}
	systems := append(append([]string{suite.TickDB}, r.Systems()...), suite.Limit)
	plots := [][]*plot.Plot{{latencyPlot(r, systems), throughputPlot(r, systems)}}

	var c vg.CanvasWriterTo
	if ext == ".png" {
		c = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(plotW, plotH), vgimg.UseDPI(plotDPI))}
	} else {
		c = vgsvg.New(plotW, plotH)
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 2, PadTop: vg.Inch / 8,
		PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 4}
	for i, pc := range plot.Align(plots, tiles, dc)[0] {
		plots[0][i].Draw(pc)
	}

	f, err := os.Create(file)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	_, err = c.WriteTo(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("plot: %s: %w", file, err)
	}
	return nil
}

// ninesX is percentile p (0-100) on the "nines" axis: 1/(1 - p/100), so 0
// is 1, 90 is 10, 99 is 100 and 99.9 is 1000; 100 is +Inf.
func ninesX(p float64) float64 { return 1 / (1 - p/100) }

// ninesLabel is the percentile at x = 10^k: "0%", "90%", "99%", "99.9%", ...
func ninesLabel(k int) string {
	switch {
	case k <= 0:
		return "0%"
	case k == 1:
		return "90%"
	}
	return "99" + strings.TrimSuffix("."+strings.Repeat("9", k-2), ".") + "%"
}

func latencyPlot(r *suite.Report, systems []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Latency by percentile"
	metrics := r.Metrics()
	lines := 0
	for _, x := range r.Results {
		if x.Lat == nil || len(x.Lat.Curve) < 2 || x.Unit == suite.UnitBytes {
			continue
		}
		var xys plotter.XYs
		for _, pt := range x.Lat.Curve {
			px := ninesX(pt.Percentile)
			if math.IsInf(px, 1) && len(xys) > 0 {
				px = xys[len(xys)-1].X * 10
			}
			if px > 0 && !math.IsInf(px, 0) && pt.Value > 0 {
				xys = append(xys, plotter.XY{X: px, Y: pt.Value})
			}
		}
		if len(xys) < 2 {
			continue
		}
		l, err := plotter.NewLine(xys)
		if err != nil { // only for NaN or Inf, filtered above
			continue
		}
		l.Color = plotutil.Color(slices.Index(systems, x.System))
		l.Dashes = plotutil.Dashes(slices.Index(metrics, x.Metric))
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(x.Metric+" · "+x.System, l)
		lines++
	}
	if lines == 0 {
		p.Title.Text += ": no data"
		p.HideAxes()
		return p
	}
	p.X.Label.Text = "percentile"
	p.Y.Label.Text = "latency"
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	p.X.Min, p.X.Max = decades(p.X.Min, p.X.Max)
	p.Y.Min, p.Y.Max = decades(p.Y.Min, p.Y.Max)
	p.Legend.Left = true
	legendRoom(p)
	p.X.Tick.Marker = logTicks(func(x float64) string { return ninesLabel(int(math.Round(math.Log10(x)))) })
	p.Y.Tick.Marker = logTicks(suite.Dur)
	p.Add(plotter.NewGrid())
	return p
}

func throughputPlot(r *suite.Report, systems []string) *plot.Plot {
	p := plot.New()
	p.Title.Text = "Throughput (rows/s, higher is better)"
	var metrics []string
	lo := math.Inf(1)
	for _, m := range r.Metrics() {
		for _, s := range systems {
			if x := r.Find(m, s); isRate(x) {
				if !slices.Contains(metrics, m) {
					metrics = append(metrics, m)
				}
				lo = min(lo, x.Value)
			}
		}
	}
	if len(metrics) == 0 {
		p.Title.Text += ": no data"
		p.HideAxes()
		return p
	}
	// A bar grows from 0, which a log axis cannot place, so every bar
	// stands on an undrawn bar as tall as the axis' bottom decade, at
	// least half a decade below the lowest value.
	floor, _ := decades(lo/3, lo)
	base := &plotter.BarChart{Values: plotter.Values{floor}}
	// Each metric gets a slot of a data area about 4.5 inches wide, and
	// its group of bars takes 70% of the slot.
	width := 0.7 * 4.5 * vg.Inch / vg.Length(len(metrics)*len(systems))
	for si, s := range systems {
		inLegend := false
		for mi, m := range metrics {
			x := r.Find(m, s)
			if !isRate(x) {
				continue
			}
			b, err := plotter.NewBarChart(plotter.Values{x.Value - floor}, width)
			if err != nil { // not reached: the width is positive
				continue
			}
			b.StackOn(base)
			b.XMin = float64(mi)
			b.Offset = (vg.Length(si) - vg.Length(len(systems)-1)/2) * width
			b.Color = plotutil.Color(si)
			b.LineStyle.Width = 0
			p.Add(b)
			if !inLegend {
				p.Legend.Add(s, b)
				inLegend = true
			}
		}
	}
	p.NominalX(metrics...)
	// Slanted labels, ending at their group, stay apart however many.
	p.X.Tick.Label.Rotation = math.Pi / 6
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XRight, draw.YTop
	p.X.Min, p.X.Max = -0.5, float64(len(metrics))-0.5
	p.Y.Label.Text = "rows/s"
	p.Y.Scale = plot.LogScale{}
	p.Y.Min, p.Y.Max = decades(p.Y.Min, p.Y.Max)
	legendRoom(p)
	p.Y.Tick.Marker = logTicks(suite.Num)
	p.Add(&plotter.Grid{Horizontal: plotter.DefaultGridLineStyle})
	return p
}

// legendRoom puts p's legend at the top, in 10 pt, over empty decades
// added on top of p's log y axis: as many as the legend takes of a data
// area about 3.5 inches high (a legend L high in an area H high spans k of
// n+k decades when k >= n·L/(H-L)).
func legendRoom(p *plot.Plot) {
	p.Legend.Top = true
	p.Legend.TextStyle.Font.Size = vg.Points(10)
	l, h := p.Legend.Rectangle(draw.Canvas{}).Size().Y+vg.Points(6), 3.5*vg.Inch
	n := math.Log10(p.Y.Max / p.Y.Min)
	p.Y.Max *= math.Pow(10, math.Ceil(n*float64(l/max(h-l, l))))
}

// isRate reports whether x is a throughput the bar chart can draw.
func isRate(x *suite.Result) bool {
	return x != nil && x.Unit == "rows/s" && x.Value > 0 && !math.IsInf(x.Value, 1)
}

// decades widens [lo, hi] (both > 0) to whole powers of ten, at least one
// decade apart, so a log axis shows two labelled ticks. A bound within a
// millionth of a decade of a power of ten counts as on it: ninesX(99.999),
// say, is 10^5 only up to rounding, and must not add an empty decade.
func decades(lo, hi float64) (float64, float64) {
	a, b := math.Floor(math.Log10(lo)+1e-6), math.Ceil(math.Log10(hi)-1e-6)
	if b <= a {
		b = a + 1
	}
	return math.Pow(10, a), math.Pow(10, b)
}

// logTicks marks each power of ten in range with label and its 2..9
// multiples with unlabelled minor ticks.
func logTicks(label func(float64) string) plot.Ticker {
	return plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		var ts []plot.Tick
		for k := math.Floor(math.Log10(lo)); k <= math.Ceil(math.Log10(hi)); k++ {
			d := math.Pow(10, k)
			ts = append(ts, plot.Tick{Value: d, Label: label(d)})
			for m := 2.0; m <= 9; m++ {
				ts = append(ts, plot.Tick{Value: m * d})
			}
		}
		return ts
	})
}
