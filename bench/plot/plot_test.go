package plot

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/internal/harness/suite"
)

func TestPlotNinesX(t *testing.T) {
	for _, c := range []struct{ p, want float64 }{
		{0, 1}, {50, 2}, {90, 10}, {99, 100}, {99.9, 1000}, {99.99, 1e4},
	} {
		if got := ninesX(c.p); math.Abs(got-c.want) > 1e-6*c.want {
			t.Errorf("ninesX(%v) = %v, want %v", c.p, got, c.want)
		}
	}
	if got := ninesX(100); !math.IsInf(got, 1) {
		t.Errorf("ninesX(100) = %v, want +Inf", got)
	}
	for k, want := range []string{"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"} {
		if got := ninesLabel(k); got != want {
			t.Errorf("ninesLabel(%d) = %q, want %q", k, got, want)
		}
	}
}

// TestPlotRanges checks the axes the panels get: the latency x axis ends
// at the decade just past the rightmost point (the max, a decade right of
// the last percentile), even where that point is a power of ten only up to
// rounding; both y axes leave an empty decade or more on top for the
// legend; the lowest bar stands at least half a decade tall.
func TestPlotRanges(t *testing.T) {
	systems := []string{suite.TickDB, suite.Limit}
	for _, c := range []struct {
		n    int
		want float64 // X.Max
	}{{200, 1e4}, {3125, 1e5}, {100_000, 1e6}, {140_000, 1e7}} {
		h := suite.NewHist()
		for i := range c.n {
			suite.Record(h, int64(100+i%1000))
		}
		x := suite.NewResult("append", suite.TickDB, "ns", true, []float64{100})
		x.Lat = suite.LatencyOf(h)
		p := latencyPlot(&suite.Report{Results: []suite.Result{x}}, systems)
		right := 10 * ninesX(x.Lat.Curve[len(x.Lat.Curve)-2].Percentile)
		if p.X.Max != c.want || p.X.Max < right*(1-1e-6) {
			t.Errorf("%d samples: x axis ends at %g, want %g, just past the max at %g", c.n, p.X.Max, c.want, right)
		}
		if p.Y.Max < 10*x.Lat.Max {
			t.Errorf("%d samples: y axis ends at %g, want a decade or more above the max %g", c.n, p.Y.Max, x.Lat.Max)
		}
	}

	lo, hi := 1.02e6, 2e9
	r := &suite.Report{Results: []suite.Result{
		suite.NewResult("scan", suite.TickDB, "rows/s", false, []float64{lo}),
		suite.NewResult("scan", suite.Limit, "rows/s", false, []float64{hi}),
	}}
	p := throughputPlot(r, systems)
	if p.Y.Min > lo/3 || p.Y.Max < 10*hi {
		t.Errorf("throughput y axis = [%g, %g], want at most %g and at least %g", p.Y.Min, p.Y.Max, lo/3, 10*hi)
	}
}

// plotReport is a report with two latency curves and two rows/s metrics
// over tickdb, two peers and the limit, one result missing.
func plotReport() *suite.Report {
	rng := rand.New(rand.NewPCG(1, 2))
	lat := func(base float64) *suite.Latency {
		h := suite.NewHist()
		for range 20_000 {
			suite.Record(h, int64(base*(1+rng.ExpFloat64())))
		}
		return suite.LatencyOf(h)
	}
	r := &suite.Report{}
	add := func(metric, system string, v float64, l *suite.Latency) {
		x := suite.NewResult(metric, system, "rows/s", false, []float64{v, v * 1.1, v * 0.9})
		x.Lat = l
		r.Results = append(r.Results, x)
	}
	add("ingest", suite.TickDB, 4e7, lat(200))
	add("ingest", "questdb", 2e6, lat(5_000))
	add("ingest", "influx", 3e5, nil)
	add("ingest", suite.Limit, 9e8, nil)
	add("scan", suite.TickDB, 5e8, nil)
	add("scan", "questdb", 1e8, nil) // influx missing on scan
	add("scan", suite.Limit, 2e9, nil)
	r.Results = append(r.Results, suite.NewResult("open", suite.TickDB, "ms", true, []float64{3}))
	return r
}

func TestPlot(t *testing.T) {
	dir := t.TempDir()
	r := plotReport()

	pngFile := filepath.Join(dir, "x.png")
	if err := Write(r, pngFile); err != nil {
		t.Fatal(err)
	}
	b := readAtLeast(t, pngFile, 10_000)
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode %s: %v", pngFile, err)
	}
	if s := img.Bounds().Size(); s.X != 1200 || s.Y != 500 {
		t.Errorf("png size = %v, want 1200x500", s)
	}

	svgFile := filepath.Join(dir, "x.svg")
	if err := Write(r, svgFile); err != nil {
		t.Fatal(err)
	}
	s := string(readAtLeast(t, svgFile, 10_000))
	if !strings.HasPrefix(s, "<?xml") && !strings.Contains(s, "<svg") {
		t.Errorf("%s is not an SVG: starts %q", svgFile, s[:min(len(s), 40)])
	}
	for _, want := range []string{"Latency by percentile", "Throughput", "ingest · tickdb", "questdb", "99.9%"} {
		if !strings.Contains(s, want) {
			t.Errorf("svg lacks %q", want)
		}
	}
}

func TestPlotBadExtension(t *testing.T) {
	file := filepath.Join(t.TempDir(), "x.gif")
	err := Write(plotReport(), file)
	if err == nil || !strings.Contains(err.Error(), "x.gif") || !strings.Contains(err.Error(), ".png") {
		t.Fatalf("Plot(%s) = %v, want an error naming the file and .png/.svg", file, err)
	}
	if _, err := os.Stat(file); err == nil {
		t.Errorf("Plot wrote %s", file)
	}
}

func TestPlotEmpty(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x.png", "x.svg"} {
		file := filepath.Join(dir, name)
		if err := Write(&suite.Report{}, file); err != nil {
			t.Fatalf("empty report: %v", err)
		}
		b := readAtLeast(t, file, 500) // two titles and nothing else
		if name == "x.svg" && !bytes.Contains(b, []byte("no data")) {
			t.Errorf("%s lacks a \"no data\" title", name)
		}
	}
}

// TestPlotPartial draws reports that fill one panel, or fill it with one
// value, which must neither fail nor panic on the log axes.
func TestPlotPartial(t *testing.T) {
	h := suite.NewHist()
	suite.Record(h, 500)
	suite.Record(h, 500)
	one := suite.NewResult("ingest", suite.TickDB, "rows/s", false, []float64{7})
	one.Lat = suite.LatencyOf(h)
	onlyLat := suite.NewResult("window", suite.TickDB, "ns", true, []float64{500})
	onlyLat.Lat = suite.LatencyOf(h)
	for _, c := range []struct {
		name string
		r    *suite.Report
	}{
		{"one value", &suite.Report{Results: []suite.Result{one}}},
		{"latency only", &suite.Report{Results: []suite.Result{onlyLat}}},
		{"rows/s only", &suite.Report{Results: []suite.Result{suite.NewResult("scan", "peer", "rows/s", false, []float64{3e6})}}},
		{"zero value", &suite.Report{Results: []suite.Result{suite.NewResult("scan", suite.Limit, "rows/s", false, []float64{0})}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "x.svg")
			if err := Write(c.r, file); err != nil {
				t.Fatal(err)
			}
			readAtLeast(t, file, 500)
		})
	}
}

// readAtLeast reads file and fails unless it holds at least n bytes.
func readAtLeast(t *testing.T, file string, n int) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < n {
		t.Fatalf("%s holds %d bytes, want at least %d", file, len(b), n)
	}
	return b
}

// TestWriteFromJSON draws a report read back from its JSON (what
// `go run . --plot-json` does with tickdb bench --json's output).
func TestWriteFromJSON(t *testing.T) {
	var buf bytes.Buffer
	if err := plotReport().WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var rep suite.Report
	if err := json.Unmarshal(buf.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "x.svg")
	if err := Write(&rep, file); err != nil {
		t.Fatal(err)
	}
	if b := readAtLeast(t, file, 500); !bytes.Contains(b, []byte("ingest · tickdb")) {
		t.Errorf("the plot of the report read back lacks its results")
	}
}
