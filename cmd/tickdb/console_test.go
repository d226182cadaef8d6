package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// chromiumPath finds a Chromium or Chrome to drive: $CHROMIUM, else the
// usual names on $PATH.
func chromiumPath() string {
	if p := os.Getenv("CHROMIUM"); p != "" {
		return p
	}
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(n); err == nil {
			return p
		}
	}
	return ""
}

// serveDo sends one request to a running serve with the token.
func serveDo(t *testing.T, p *serveProc, method, path, body string) string {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+p.http+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return string(b)
}

// TestConsoleBrowser loads the console in a real headless Chromium against
// "tickdb serve": it gives the token when asked, checks the Tables panel,
// the Latest panel (as GET /latest, then a tick of one symbol within a
// second), a query against the data and its Parquet link, opens the chart in live mode, publishes
// ticks and waits for the last candle to change, and fails on any error
// the page logs or throws. With TICKDB_CONSOLE_SCREENSHOT=FILE it saves a
// screenshot there (docs/console.png in README is made so). Without a
// browser it skips, unless under CI (testutil.Need), where it fails.
func TestConsoleBrowser(t *testing.T) {
	exe := chromiumPath()
	if exe == "" {
		testutil.Need(t, "no chromium on PATH (apt-get install chromium, or set CHROMIUM; CI installs Debian's chromium: .ci/run)")
	}
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live, "--token", "tok")

	// An hour of ticks every 5 s for two symbols, up to a minute ago:
	// random walks (a fixed seed) in steps of 0.25.
	now := time.Now()
	start := now.Add(-time.Hour).Truncate(time.Minute)
	rnd := rand.New(rand.NewPCG(1, 2))
	px := map[string]float64{"AAPL": 190, "MSFT": 410}
	var b strings.Builder
	rows := 0
	for ts := start; ts.Before(now.Add(-time.Minute)); ts = ts.Add(5 * time.Second) {
		for j, sym := range []string{"AAPL", "MSFT"} {
			px[sym] += float64(rnd.IntN(9)-4) * 0.25
			fmt.Fprintf(&b, "trades,sym=%s price=%s,size=%di %d\n", sym, strconv.FormatFloat(px[sym], 'f', -1, 64), 1+rnd.IntN(50), ts.UnixNano()+int64(j))
			rows++
		}
	}
	serveDo(t, p, "POST", "/write", b.String())

	// The browser's life is bctx's; no timeout on it (chromedp.Run's rule):
	// each step runs with a deadline of its own.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.WindowSize(1280, 1150))
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
	text := func(sel string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
		if err != nil {
			t.Fatalf("text of %s: %v", sel, err)
		}
		return s
	}
	grid := func(sel string) [][]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll('`+sel+` tbody tr')].map(tr => [...tr.cells].map(td => td.textContent))`))
		if err != nil {
			t.Fatalf("cells of %s: %v", sel, err)
		}
		return v
	}
	// Start the browser, then collect every console message, exception
	// and browser-log entry of the page: any error fails the test. The
	// one expected is the browser's own network line for the first 401
	// (the page asks for the token then), a log entry of source network.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil { // the browser lives as long as bctx
		t.Fatalf("starting %s: %v", exe, err)
	}
	var mu sync.Mutex
	var pageErrs []string
	cctx, ccancel := context.WithCancel(bctx)
	consoleDone := make(chan struct{})
	msgs := chromedp.Console(cctx)
	go func() {
		defer close(consoleDone)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if m.Type != chromedp.ConsoleError && !m.IsException() {
				continue
			}
			if m.Source == "network" && strings.Contains(m.Text, "401") {
				continue
			}
			mu.Lock()
			pageErrs = append(pageErrs, m.String()+" "+m.URL)
			mu.Unlock()
		}
	}()
	defer func() { ccancel(); <-consoleDone }()
	checkErrs := func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(pageErrs) > 0 {
			t.Fatalf("the page logged errors:\n%s", strings.Join(pageErrs, "\n"))
		}
	}

	// The page loads without the token, then asks for it.
	step("load", 30*time.Second, chromedp.Navigate("http://"+p.http+"/"), chromedp.WaitVisible(chromedp.ID("token-form")),
		chromedp.SendKeys(chromedp.ID("token"), "tok"), chromedp.Click(chromedp.CSS("#token-form button")))

	// Tables: the row count and the time range, as the server has them.
	step("tables", 30*time.Second, chromedp.WaitVisible(chromedp.CSS(`#tables tr[data-table="trades"]`)))
	if got, want := text(`#tables tr[data-table="trades"] td.rows`), fmt.Sprintf("%d", rows); strings.ReplaceAll(got, ",", "") != want {
		t.Fatalf("tables panel: %q rows, want %s", got, want)
	}
	if got, want := text(`#tables tr[data-table="trades"] td:nth-child(4)`), start.UTC().Format("2006-01-02T15:04:05.000Z"); got != want {
		t.Fatalf("tables panel: first %q, want %s", got, want)
	}

	// Latest: each symbol's last row, as GET /latest has it, then live.
	step("latest", 30*time.Second, chromedp.SetValue(chromedp.ID("l-table"), "trades"), chromedp.Click(chromedp.CSS("#latest-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(`#latest tbody tr[data-sym="MSFT"]`)),
		chromedp.WaitVisible(chromedp.Search(`//small[@id="l-info"][contains(., "live")]`)))
	latestWant := func() [][]string {
		t.Helper()
		var want [][]string
		dec := json.NewDecoder(strings.NewReader(serveDo(t, p, "GET", "/latest?table=trades&format=json", "")))
		dec.UseNumber()
		for dec.More() {
			var row struct {
				Ts, Sym     string
				Price, Size json.Number
			}
			if err := dec.Decode(&row); err != nil {
				t.Fatal(err)
			}
			want = append(want, []string{row.Ts, row.Sym, row.Price.String(), row.Size.String()})
		}
		return want
	}
	// The table's columns (after them come the change and its %, which
	// TestConsoleViews checks).
	tableCols := func(g [][]string) [][]string {
		for i := range g {
			g[i] = g[i][:min(4, len(g[i]))]
		}
		return g
	}
	if got, want := tableCols(grid("#latest")), latestWant(); len(want) != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("latest panel:\n%v\nwant (GET /latest):\n%v", got, want)
	}
	// A tick of MSFT and one of a new symbol: MSFT's row shows its tick
	// (live, without a reload; how fast is TestConsolePerf's business, so
	// the bound here is generous for two busy cores), IBM's row comes
	// between AAPL's and MSFT's, AAPL's stays.
	lastMSFT := px["MSFT"] + 0.75
	serveDo(t, p, "POST", "/write", fmt.Sprintf("trades,sym=MSFT price=%s,size=42i %d\ntrades,sym=IBM price=150.5,size=7i %d\n",
		strconv.FormatFloat(lastMSFT, 'f', -1, 64), time.Now().UnixNano(), time.Now().UnixNano()))
	published := time.Now()
	{
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//table[@id="latest"]//tr[@data-sym="MSFT"]/td[3][.="`+strconv.FormatFloat(lastMSFT, 'f', -1, 64)+`"]`)),
			chromedp.WaitVisible(chromedp.CSS(`#latest tbody tr[data-sym="IBM"]`)))
		cancel()
		if err != nil {
			t.Fatalf("the latest panel did not take MSFT's tick within 30 s: %v (shows %v)", err, grid("#latest"))
		}
	}
	t.Logf("latest panel took the tick in %v", time.Since(published))
	if got, want := tableCols(grid("#latest")), latestWant(); fmt.Sprint(got) != fmt.Sprint(want) || len(want) != 3 || want[1][1] != "IBM" || want[2][3] != "42" {
		t.Fatalf("latest panel after a tick:\n%v\nwant (GET /latest):\n%v", got, want)
	}

	// Without --sql the Query panel is the form alone: no SQL toggle, no
	// SQL form (GET /api/tables says "sql": false).
	{
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		shown, err := chromedp.Run(ctx, chromedp.Evaluate[[]bool](`['query-form', 'q-modes', 'sql-form'].map(id => document.getElementById(id).offsetParent !== null)`))
		cancel()
		if err != nil || fmt.Sprint(shown) != "[true false false]" {
			t.Fatalf("query panel without --sql: form, SQL toggle, SQL form shown %v (%v), want [true false false]", shown, err)
		}
	}

	// Query: a page of one symbol's rows, newest first, cell for cell as
	// GET /query?order=desc has them.
	step("query", 30*time.Second, chromedp.SetValue(chromedp.ID("q-table"), "trades"), chromedp.SetValue(chromedp.ID("q-sym"), "MSFT"),
		chromedp.SetValue(chromedp.ID("q-limit"), "7"), chromedp.Click(chromedp.CSS("#query-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="q-info"][.="page 1: 7 rows"]`))) // not the first load's page of 100
	cells := grid("#q-result")
	var want [][]string
	dec := json.NewDecoder(strings.NewReader(serveDo(t, p, "GET", "/query?table=trades&sym=MSFT&order=desc&limit=7", "")))
	dec.UseNumber()
	for dec.More() {
		var row struct {
			Ts, Sym     string
			Price, Size json.Number
		}
		if err := dec.Decode(&row); err != nil {
			t.Fatal(err)
		}
		want = append(want, []string{row.Ts, row.Sym, row.Price.String(), row.Size.String()})
	}
	if len(want) != 7 || fmt.Sprint(cells) != fmt.Sprint(want) {
		t.Fatalf("query panel:\n%v\nwant (GET /query):\n%v", cells, want)
	}
	// The download links are the form's query, Parquet too.
	{
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('q-parquet').getAttribute('href')`))
		cancel()
		if want := "/query?table=trades&sym=MSFT&order=desc&format=parquet&limit=7"; err != nil || href != want {
			t.Fatalf("Parquet link: %q, %v; want %q", href, err, want)
		}
		if pq := serveDo(t, p, "GET", href, ""); !strings.HasPrefix(pq, "PAR1") || !strings.HasSuffix(pq, "PAR1") {
			t.Fatalf("GET %s: not a Parquet file (%d bytes)", href, len(pq))
		}
	}

	// The next page goes on where it stopped: older rows.
	step("next page", 30*time.Second, chromedp.Click(chromedp.ID("q-next")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="q-info"][starts-with(., "page 2")]`)))
	if cells = grid("#q-result"); len(cells) != 7 || cells[0][0] >= want[6][0] {
		t.Fatalf("page 2 starts with %v, after %v", cells, want[6])
	}

	// Chart: minute candles of AAPL, live.
	step("chart", 30*time.Second, chromedp.SetValue(chromedp.ID("c-table"), "trades"), chromedp.SetValue(chromedp.ID("c-sym"), "AAPL"),
		chromedp.SetValue(chromedp.ID("c-interval"), "1m"), chromedp.Click(chromedp.CSS("#chart-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#chart canvas")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="c-info"][contains(., "live")]`)))
	before := text("#chart-last")
	if before == "none" {
		t.Fatal("the chart shows no candle")
	}
	// A tick now: the last candle changes (a new one, or this minute's)
	// within a second.
	waitLast := func(has string) (string, error) {
		ctx, cancel := context.WithTimeout(bctx, time.Second)
		defer cancel()
		err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.Search(`//code[@id="chart-last"][contains(., "`+has+`")]`)))
		return text("#chart-last"), err
	}
	last := px["AAPL"]
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) } // as JavaScript prints it
	serveDo(t, p, "POST", "/write", fmt.Sprintf("trades,sym=AAPL price=%s,size=3i %d\n", f(last+1.25), time.Now().UnixNano()))
	published = time.Now()
	after, err := waitLast("C " + f(last+1.25) + " ")
	if err != nil {
		t.Fatalf("the last candle did not take the tick within 1 s: %v (was %q, now %q)", err, before, after)
	}
	t.Logf("last candle %q -> %q in %v", before, after, time.Since(published))
	// Two more ticks, 1 ns apart: the candle's high and close move.
	ts := time.Now().UnixNano()
	serveDo(t, p, "POST", "/write", fmt.Sprintf("trades,sym=AAPL price=%s,size=1i %d\ntrades,sym=AAPL price=%s,size=1i %d\n", f(last+3.5), ts, f(last+2.75), ts+1))
	if after, err = waitLast("C " + f(last+2.75) + " "); err != nil || !strings.Contains(after, "H "+f(last+3.5)+" ") {
		t.Fatalf("the last candle after two more ticks: %q, %v", after, err)
	}

	ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
	defer cancel()
	if err := chromedp.Do(ctx, chromedp.Sleep(200*time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil || img.Bounds().Dx() < 800 {
		t.Fatalf("screenshot: %v", err)
	}
	if out := os.Getenv("TICKDB_CONSOLE_SCREENSHOT"); out != "" {
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(out, shot, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot saved to %s", out)
	}
	if cls := text("#status"); cls != "" {
		t.Fatalf("the page shows an error: %s", cls)
	}
	checkErrs()
}

// jsSigned is the console's signed(x, digits): a leading + when x > 0;
// digits < 0 is the shortest form (after rounding to 12 significant
// digits), else a fixed number of digits.
func jsSigned(x float64, digits int) string {
	var s string
	if digits < 0 {
		c, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 12, 64), 64)
		s = strconv.FormatFloat(c, 'f', -1, 64)
	} else {
		s = strconv.FormatFloat(x, 'f', digits, 64)
	}
	if x > 0 {
		s = "+" + s
	}
	return s
}

// TestConsoleViews drives the console's views in Chromium at 1366x768:
// the first load (the most recently written table in every panel, the
// query newest first page by page, the chart of the most active symbol,
// the Tables grid without a horizontal scrollbar), the change since a
// time and the spread in Latest (the numbers as the rows give them), a
// deep link to an overlay of two symbols (each one's % change as GET
// /bars gives its closes), and the last view coming back on a plain load.
func TestConsoleViews(t *testing.T) {
	exe := chromiumPath()
	if exe == "" {
		testutil.Need(t, "no chromium on PATH (apt-get install chromium, or set CHROMIUM; CI installs Debian's chromium: .ci/run)")
	}
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live, "--token", "tok")

	// alpha: quotes (bid, ask) two hours old. trades: an hour of AAPL and
	// MSFT every 5 s up to a minute ago (AAPL has the most rows), and IBM
	// every second in its last ten minutes (the most rows of the newest
	// 1,000: the most active).
	type tick struct {
		ts    int64
		sym   string
		price float64
	}
	var ticks []tick
	now := time.Now()
	start := now.Add(-time.Hour).Truncate(time.Minute)
	end := now.Add(-time.Minute)
	rnd := rand.New(rand.NewPCG(3, 4))
	px := map[string]float64{"AAPL": 190, "MSFT": 410, "IBM": 150}
	var b strings.Builder
	for ts := start; ts.Before(end); ts = ts.Add(time.Second) {
		syms := []string{}
		if ts.Sub(start)%(5*time.Second) == 0 {
			syms = append(syms, "AAPL", "MSFT")
		}
		if end.Sub(ts) <= 10*time.Minute {
			syms = append(syms, "IBM")
		}
		for j, sym := range syms {
			px[sym] += float64(rnd.IntN(9)-4) * 0.25
			tk := tick{ts.UnixNano() + int64(j), sym, px[sym]}
			ticks = append(ticks, tk)
			fmt.Fprintf(&b, "trades,sym=%s price=%s,size=%di %d\n", sym, strconv.FormatFloat(tk.price, 'f', -1, 64), 1+rnd.IntN(50), tk.ts)
		}
	}
	old := now.Add(-2 * time.Hour).UnixNano()
	fmt.Fprintf(&b, "alpha,sym=EURUSD bid=1.25,ask=1.5 %d\nalpha,sym=GBPUSD bid=1.75,ask=2.5 %d\nalpha,sym=EURUSD bid=1.5,ask=1.625 %d\n", old, old+1, old+2)
	// A table of many columns, its schema a long text for the Tables grid.
	fmt.Fprintf(&b, "wide_table_of_bars,sym=X,venue=NYSE,cond=regular bid=1,ask=2,bid_size=1i,ask_size=2i,last=1.5,volume=3i,open=1,high=2,low=1,close=1.5,vwap=1.25,trades=7i %d\n", old)
	serveDo(t, p, "POST", "/write", b.String())

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1366, 768))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v\nserve log:\n%s", what, err, p.logText())
		}
	}
	eval := func(js string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("%s: %v", js, err)
		}
		return v
	}
	grid := func(sel string) [][]string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 30*time.Second)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[[][]string](`[...document.querySelectorAll('`+sel+` tbody tr')].map(tr => [...tr.cells].map(td => td.textContent))`))
		if err != nil {
			t.Fatalf("cells of %s: %v", sel, err)
		}
		return v
	}
	// rowsOf is GET path's rows as the console's grids show them.
	rowsOf := func(path string) [][]string {
		t.Helper()
		var out [][]string
		dec := json.NewDecoder(strings.NewReader(serveDo(t, p, "GET", path, "")))
		dec.UseNumber()
		for dec.More() {
			var row struct {
				Ts, Sym     string
				Price, Size json.Number
			}
			if err := dec.Decode(&row); err != nil {
				t.Fatal(err)
			}
			out = append(out, []string{row.Ts, row.Sym, row.Price.String(), row.Size.String()})
		}
		return out
	}
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("starting %s: %v", exe, err)
	}
	var mu sync.Mutex
	var pageErrs []string
	cctx, ccancel := context.WithCancel(bctx)
	consoleDone := make(chan struct{})
	msgs := chromedp.Console(cctx)
	go func() {
		defer close(consoleDone)
		for m, err := range msgs {
			if err != nil {
				return
			}
			if (m.Type == chromedp.ConsoleError || m.IsException()) && !(m.Source == "network" && strings.Contains(m.Text, "401")) {
				mu.Lock()
				pageErrs = append(pageErrs, m.String()+" "+m.URL)
				mu.Unlock()
			}
		}
	}()
	defer func() { ccancel(); <-consoleDone }()
	checkErrs := func() {
		t.Helper()
		mu.Lock()
		defer mu.Unlock()
		if len(pageErrs) > 0 {
			t.Fatalf("the page logged errors:\n%s", strings.Join(pageErrs, "\n"))
		}
	}

	// First load: the token, then every panel on trades without a click.
	step("load", chromedp.Navigate("http://"+p.http+"/"), chromedp.WaitVisible(chromedp.ID("token-form")),
		chromedp.SendKeys(chromedp.ID("token"), "tok"), chromedp.Click(chromedp.CSS("#token-form button")))
	step("first view", chromedp.WaitVisible(chromedp.CSS(`#tables tr[data-table="alpha"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#latest tbody tr[data-sym="IBM"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#q-result tbody tr`)),
		chromedp.WaitVisible(chromedp.CSS(`#chart canvas`)),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="c-info"][contains(., "bars")]`)))
	for id, want := range map[string]string{"l-table": "trades", "q-table": "trades", "c-table": "trades", "c-sym": "IBM", "q-order": "desc"} {
		if got := eval(`document.getElementById('` + id + `').value`); got != want {
			t.Errorf("first view: #%s is %q, want %q", id, got, want)
		}
	}
	if h := eval(`location.hash`); !strings.Contains(h, "table=trades") || !strings.Contains(h, "sym=IBM") {
		t.Errorf("first view: the URL's fragment is %q, want the table and symbol", h)
	}
	if got := eval(`document.getElementById('chart-last').textContent`); got == "none" {
		t.Errorf("first view: the chart shows no candle")
	}
	// The Tables grid fits the window's width.
	if w := eval(`(() => { const e = document.scrollingElement; return e.scrollWidth + ' ' + e.clientWidth; })()`); func() bool {
		var sw, cw int
		fmt.Sscan(w, &sw, &cw)
		return cw < 1000 || sw > cw
	}() {
		t.Errorf("at 1366x768 the page is %s px wide (scrollWidth, clientWidth): a horizontal scrollbar", w)
	} else {
		t.Logf("at 1366x768: scrollWidth, clientWidth %s; the Tables grid %s px wide", w, eval(`String(document.getElementById('tables').scrollWidth)`))
	}

	// Query: newest first, page by page, as GET /query?order=desc has it;
	// then oldest first.
	if got, want := grid("#q-result"), rowsOf("/query?table=trades&order=desc&limit=100"); len(want) != 100 || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("first query page:\n%v\nwant (order=desc):\n%v", got, want)
	}
	newest200 := rowsOf("/query?table=trades&order=desc&limit=200")
	step("query page 2", chromedp.Click(chromedp.ID("q-next")), chromedp.WaitVisible(chromedp.Search(`//span[@id="q-info"][starts-with(., "page 2")]`)))
	if got := grid("#q-result"); fmt.Sprint(got) != fmt.Sprint(newest200[100:]) {
		t.Fatalf("query page 2:\n%v\nwant rows 100-199 newest first:\n%v", got, newest200[100:])
	}
	step("oldest first", chromedp.SetValue(chromedp.ID("q-order"), "asc"), chromedp.Evaluate[chromedp.Void](`document.getElementById('q-order').dispatchEvent(new Event('change'))`),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="q-info"][starts-with(., "page 1")]`)))
	if got, want := grid("#q-result"), rowsOf("/query?table=trades&limit=100"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("oldest first:\n%v\nwant:\n%v", got, want)
	}

	// Latest: the change since a time, from the ticks: each symbol's last
	// price less its price at since (its last tick at or before since,
	// else its first after).
	changes := func(since int64) map[string][2]string {
		last, base := map[string]float64{}, map[string]float64{}
		for _, tk := range ticks {
			last[tk.sym] = tk.price
			if _, ok := base[tk.sym]; tk.ts <= since || !ok {
				base[tk.sym] = tk.price
			}
		}
		out := map[string][2]string{}
		for sym, v := range last {
			out[sym] = [2]string{jsSigned(v-base[sym], -1), jsSigned((v/base[sym]-1)*100, 2) + "%"}
		}
		return out
	}
	checkChanges := func(what string, since int64) {
		t.Helper()
		want := changes(since)
		got := grid("#latest")
		if len(got) != 3 {
			t.Fatalf("%s: latest shows %v", what, got)
		}
		for _, row := range got {
			if len(row) != 6 || [2]string{row[4], row[5]} != want[row[1]] {
				t.Errorf("%s: %s's row %v, want change %v", what, row[1], row, want[row[1]])
			}
		}
	}
	lastTs := ticks[len(ticks)-1].ts
	dayStart := lastTs - lastTs%(24*int64(time.Hour))
	checkChanges("since the start of the UTC day", dayStart)
	if info := eval(`document.getElementById('l-info').textContent`); !strings.Contains(info, "change since "+time.Unix(0, dayStart).UTC().Format("2006-01-02T15:04:05.000Z")) {
		t.Errorf("latest: %q does not say since when", info)
	}
	since := start.Add(30*time.Minute + 2500*time.Millisecond)
	step("latest since", chromedp.SetValue(chromedp.ID("l-since"), since.UTC().Format(time.RFC3339Nano)), chromedp.Click(chromedp.CSS("#latest-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.Search(`//small[@id="l-info"][contains(., "`+since.UTC().Format("2006-01-02T15:04:05.000Z")+`")]`)))
	checkChanges("since half an hour in", since.UnixNano())
	if changes(since.UnixNano())["AAPL"] == changes(dayStart)["AAPL"] && changes(since.UnixNano())["MSFT"] == changes(dayStart)["MSFT"] {
		t.Fatal("the two times give the same changes: the test tells nothing")
	}
	// A table of quotes: the spread, ask - bid; the change is the mid's.
	step("latest quotes", chromedp.Evaluate[chromedp.Void](`document.getElementById('l-since').value = ''`), chromedp.SetValue(chromedp.ID("l-table"), "alpha"), chromedp.Click(chromedp.CSS("#latest-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS(`#latest tbody tr[data-sym="GBPUSD"]`)))
	if got, want := fmt.Sprint(grid("#latest")), "[["+time.Unix(0, old+2).UTC().Format("2006-01-02T15:04:05.000000000Z")+" EURUSD 1.5 1.625 +0.1875 +13.64% 0.125] ["+
		time.Unix(0, old+1).UTC().Format("2006-01-02T15:04:05.000000000Z")+" GBPUSD 1.75 2.5 0 0.00% 0.75]]"; got != want {
		t.Errorf("latest of quotes:\n%s\nwant\n%s", got, want)
	}

	// A deep link: an overlay of AAPL and MSFT, 5-minute bars over a
	// fixed range, each line the % change from its first bar's close.
	from, to := start.Add(10*time.Minute), start.Add(50*time.Minute)
	link := fmt.Sprintf("/#table=trades&sym=AAPL,MSFT&interval=5m&from=%d&to=%d&panel=chart", from.UnixNano(), to.UnixNano())
	step("deep link", chromedp.Navigate("about:blank"), chromedp.Navigate("http://"+p.http+link),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="c-info"][contains(., "2 symbols")]`)))
	var want []string
	firstClose := map[string]float64{}
	for _, sym := range []string{"AAPL", "MSFT"} {
		var closes []float64
		dec := json.NewDecoder(strings.NewReader(serveDo(t, p, "GET", fmt.Sprintf("/bars?table=trades&sym=%s&interval=5m&from=%d&to=%d", sym, from.UnixNano(), to.UnixNano()), "")))
		for dec.More() {
			var bar struct{ Close float64 }
			if err := dec.Decode(&bar); err != nil {
				t.Fatal(err)
			}
			closes = append(closes, bar.Close)
		}
		if len(closes) < 8 {
			t.Fatalf("%s: %d bars, want 8 or 9", sym, len(closes))
		}
		firstClose[sym] = closes[0]
		want = append(want, sym+" "+jsSigned((closes[len(closes)-1]/closes[0]-1)*100, 2)+"%")
	}
	if got := eval(`document.getElementById('chart-last').textContent`); got != strings.Join(want, " ") {
		t.Errorf("overlay: %q, want %q (from GET /bars)", got, strings.Join(want, " "))
	}
	if got := eval(`[...document.querySelectorAll('#chart .u-legend .u-series th')].map(e => e.textContent).join('|') + ' ' + document.getElementById('c-interval').value + ' ' + (document.getElementById('chart-panel').getBoundingClientRect().top < innerHeight)`); !strings.Contains(got, "AAPL") || !strings.Contains(got, "MSFT") || !strings.HasSuffix(got, " 5m true") {
		t.Errorf("overlay: legend, interval, chart in sight: %q", got)
	}
	// The view is remembered: a plain load opens it again.
	step("remembered", chromedp.Navigate("about:blank"), chromedp.Navigate("http://"+p.http+"/"),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="c-info"][contains(., "2 symbols")]`)))
	if got := eval(`document.getElementById('c-sym').value + ' ' + document.getElementById('c-interval').value + ' ' + location.hash`); got != "AAPL,MSFT 5m "+link[1:] {
		t.Errorf("a plain load after the link: %q, want the link's view", got)
	}
	if got := eval(`document.getElementById('chart-last').textContent`); got != strings.Join(want, " ") {
		t.Errorf("overlay again: %q, want %q", got, strings.Join(want, " "))
	}
	// Without an end the overlay is live: a tick of AAPL now moves its
	// line to its % change from the same first close.
	step("overlay live", chromedp.Evaluate[chromedp.Void](`document.getElementById('c-to').value = ''`), chromedp.Click(chromedp.CSS("#chart-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="c-info"][contains(., "2 symbols")][contains(., "live")]`)))
	tickPx := px["AAPL"] + 7.5
	serveDo(t, p, "POST", "/write", fmt.Sprintf("trades,sym=AAPL price=%s,size=1i %d\n", strconv.FormatFloat(tickPx, 'f', -1, 64), time.Now().UnixNano()))
	wantLive := "AAPL " + jsSigned((tickPx/firstClose["AAPL"]-1)*100, 2) + "% MSFT "
	step("overlay tick", chromedp.WaitVisible(chromedp.Search(`//code[@id="chart-last"][starts-with(., "`+wantLive+`")]`)))
	if s := eval(`document.getElementById('status').textContent`); s != "" {
		t.Fatalf("the page shows an error: %s", s)
	}
	checkErrs()
}
