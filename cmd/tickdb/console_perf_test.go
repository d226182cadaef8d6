package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// consolePerf are the figures TestConsolePerf reads from the page.
type consolePerf struct {
	TablesShown, ChartStart, ChartDrawn float64
	Draws, LiveFrames, LiveRows         int
	LiveMs, LiveMaxMs                   float64
}

// TestConsolePerf measures the console (docs/BENCHMARKS.md): the page
// loaded over a table of 20 M rows (navigation to the Tables panel, then
// Show to the chart drawn), and the live chart while 1,000 ticks/s are
// published into the shown symbol for 10 s (the page's animation frames,
// those that drew ticks, and the dropped ones: frame gaps past 1.5 of
// the median; the long tasks, past 50 ms, that the page's main thread
// ran; and the time the live chart's frame callbacks took). It asserts no
// timing, only that it ran. Opt in with
// TICKDB_CONSOLE_PERF=1 (TICKDB_CONSOLE_PERF_ROWS overrides 20 M).
//
// TICKDB_CONSOLE_PERF_LIVE says where the live ticks go, for the
// baselines a dropped-frame count needs: "shown" (the default) into the
// charted symbol, "other" into the table's other symbol (the server and
// the writer work as much, the chart draws nothing), "none" nowhere (the
// page idles with its streams open).
func TestConsolePerf(t *testing.T) {
	if os.Getenv("TICKDB_CONSOLE_PERF") != "1" {
		t.Skip("TICKDB_CONSOLE_PERF=1 runs it")
	}
	exe := chromiumPath()
	if exe == "" {
		t.Skip("no chromium")
	}
	n := 20_000_000
	if v := os.Getenv("TICKDB_CONSOLE_PERF_ROWS"); v != "" {
		fmt.Sscan(v, &n)
	}
	db, live := testutil.DB(t)
	// The table, written directly: two symbols, a row every 10 ms each,
	// ending a minute ago.
	s := store.MustSchema(store.Column{Name: "ts", Type: store.TypeTs}, store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64}, store.Column{Name: "size", Type: store.TypeI64})
	w, err := writer.Open(db, "trades", &writer.Options{Schema: s, LiveDir: live})
	if err != nil {
		t.Fatal(err)
	}
	ids := [2]uint32{}
	for i, sym := range []string{"AAPL", "MSFT"} {
		if ids[i], err = w.SymbolString(sym); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	end := time.Now().Add(-time.Minute).UnixNano()
	start := end - int64(n/2)*int64(10*time.Millisecond)
	row := s.NewRow()
	symCol, pxCol, sizeCol := s.ColAt(1), s.ColAt(2), s.ColAt(3)
	px := [2]float64{190, 410}
	for i := range n {
		k := i % 2
		px[k] += float64(int(uint32(i)*2654435761>>29)-4) * 0.25
		row.SetTs(start + int64(i/2)*int64(10*time.Millisecond) + int64(k))
		row.SetSym(symCol, ids[k])
		row.SetF64(pxCol, px[k])
		row.SetI64(sizeCol, int64(1+i%50))
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		if i%4096 == 4095 {
			w.Publish()
		}
	}
	w.Publish()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d rows written in %v", n, time.Since(began).Round(time.Millisecond))
	p := startServe(t, "--db", db, "--live-dir", live, "--token", "tok")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 1150))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	step := func(what string, d time.Duration, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, d)
		defer cancel()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v\nserve log:\n%s", what, err, p.logText())
		}
	}
	read := func() consolePerf {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[consolePerf](`({TablesShown: tickdbPerf.tablesShown, ChartStart: tickdbPerf.chartStart, ChartDrawn: tickdbPerf.chartDrawn, Draws: tickdbPerf.draws, LiveFrames: tickdbPerf.liveFrames, LiveRows: tickdbPerf.liveRows, LiveMs: tickdbPerf.liveMs, LiveMaxMs: tickdbPerf.liveMaxMs})`))
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil { // the browser lives as long as bctx
		t.Fatalf("starting %s: %v", exe, err)
	}
	// The token once (the tab keeps it), then the measured load, from a
	// blank page a while after the token's page left (its live streams
	// closed: their teardown is not the load's). The link names a view
	// without a chart (Latest and Query of trades), so that the chart
	// drawn is the one Show asks for.
	step("token", 60*time.Second, chromedp.Navigate("http://"+p.http+"/#table=trades"), chromedp.WaitVisible(chromedp.ID("token-form")),
		chromedp.SendKeys(chromedp.ID("token"), "tok"), chromedp.Click(chromedp.CSS("#token-form button")),
		chromedp.WaitVisible(chromedp.CSS(`#tables tr[data-table="trades"]`)))
	step("load", 60*time.Second, chromedp.Navigate("about:blank"), chromedp.Sleep(2*time.Second), chromedp.Navigate("http://"+p.http+"/#table=trades"), chromedp.WaitVisible(chromedp.CSS(`#tables tr[data-table="trades"]`)))
	step("chart", 60*time.Second, chromedp.SetValue(chromedp.ID("c-table"), "trades"), chromedp.SetValue(chromedp.ID("c-sym"), "AAPL"),
		chromedp.SetValue(chromedp.ID("c-interval"), "1s"), chromedp.Click(chromedp.CSS("#chart-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="c-info"][contains(., "live")]`)))
	load := read()
	t.Logf("page load to the Tables panel: %.0f ms; Show to the chart drawn (500 bars of 1 s): %.0f ms", load.TablesShown, load.ChartDrawn-load.ChartStart)

	// Live: a frame counter of the test's own in the page (the gaps
	// between frames) and a long-task observer, then 1,000 ticks/s for
	// 10 s, sent every 10 ms.
	step("frame counter", 10*time.Second, chromedp.Evaluate[chromedp.Void](`window.tickdbFrames = {gaps: [], long: []};
		new PerformanceObserver((l) => { for (const e of l.getEntries()) window.tickdbFrames.long.push(e.duration); }).observe({type: 'longtask'});
		requestAnimationFrame(function f(t) {
			const c = window.tickdbFrames;
			if (c.last !== undefined) c.gaps.push(t - c.last);
			c.last = t;
			requestAnimationFrame(f);
		}); 0`))
	before := read()
	liveSym := "AAPL"
	switch mode := os.Getenv("TICKDB_CONSOLE_PERF_LIVE"); mode {
	case "", "shown":
	case "other":
		liveSym = "MSFT"
	case "none":
		liveSym = ""
	default:
		t.Fatalf("TICKDB_CONSOLE_PERF_LIVE=%q: want shown, other or none", mode)
	}
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	pxv := 200.0
	liveStart := time.Now()
	for time.Since(liveStart) < 10*time.Second {
		<-tick.C
		var b strings.Builder
		for range int(time.Since(liveStart)/time.Millisecond) - sent { // 1 a ms, late ones caught up
			pxv += float64(sent%7-3) * 0.25
			fmt.Fprintf(&b, "trades,sym=%s price=%g,size=1i %d\n", liveSym, pxv, time.Now().UnixNano())
			sent++
		}
		if liveSym != "" {
			serveDo(t, p, "POST", "/write", b.String())
		}
	}
	elapsed := time.Since(liveStart)
	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	gaps, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.tickdbFrames.gaps`))
	if err != nil {
		t.Fatal(err)
	}
	long, err := chromedp.Run(ctx, chromedp.Evaluate[[]float64](`window.tickdbFrames.long`))
	if err != nil {
		t.Fatal(err)
	}
	longMs := 0.0
	for _, d := range long {
		longMs += d
	}
	step("drain", 10*time.Second, chromedp.Sleep(500*time.Millisecond))
	after := read()
	if len(gaps) == 0 {
		t.Fatal("no animation frames")
	}
	sorted := append([]float64(nil), gaps...)
	for i := range sorted { // insertion sort: a few hundred values
		for j := i; j > 0 && sorted[j] < sorted[j-1]; j-- {
			sorted[j], sorted[j-1] = sorted[j-1], sorted[j]
		}
	}
	median, worst := sorted[len(sorted)/2], sorted[len(sorted)-1]
	dropped := 0
	for _, g := range gaps {
		if g > 1.5*median {
			dropped += int(g/median+0.5) - 1
		}
	}
	where := map[string]string{"AAPL": "into the charted symbol", "MSFT": "into the other symbol", "": "not sent"}[liveSym]
	t.Logf("live: %d ticks %s in %v (%.0f/s); %d frames (median %.1f ms, worst %.1f ms), %d of them drew ticks (%d rows, %d chart draws); dropped frames %d",
		sent, where, elapsed.Round(time.Millisecond), float64(sent)/elapsed.Seconds(), len(gaps)+1, median, worst,
		after.LiveFrames-before.LiveFrames, after.LiveRows-before.LiveRows, after.Draws-before.Draws, dropped)
	t.Logf("live: %d long tasks (%.0f ms); the chart's frame callbacks %.0f ms in all, the longest %.1f ms",
		len(long), longMs, after.LiveMs-before.LiveMs, after.LiveMaxMs)
	shown := 0 // the rows published into the charted symbol
	if liveSym == "AAPL" {
		shown = sent
	}
	if after.LiveRows-before.LiveRows != shown {
		t.Errorf("the chart took %d rows, %d were published into its symbol", after.LiveRows-before.LiveRows, shown)
	}
}
