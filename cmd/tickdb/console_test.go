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

	"github.com/tickdb/tickdb/internal/testutil"
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
	if got, want := grid("#latest"), latestWant(); len(want) != 2 || fmt.Sprint(got) != fmt.Sprint(want) {
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
	if got, want := grid("#latest"), latestWant(); fmt.Sprint(got) != fmt.Sprint(want) || len(want) != 3 || want[1][1] != "IBM" || want[2][3] != "42" {
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

	// Query: a page of one symbol's rows, cell for cell as GET /query has them.
	step("query", 30*time.Second, chromedp.SetValue(chromedp.ID("q-table"), "trades"), chromedp.SetValue(chromedp.ID("q-sym"), "MSFT"),
		chromedp.SetValue(chromedp.ID("q-limit"), "7"), chromedp.Click(chromedp.CSS("#query-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.CSS("#q-result tbody tr")))
	cells := grid("#q-result")
	var want [][]string
	dec := json.NewDecoder(strings.NewReader(serveDo(t, p, "GET", "/query?table=trades&sym=MSFT&limit=7", "")))
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
		if want := "/query?table=trades&sym=MSFT&format=parquet&limit=7"; err != nil || href != want {
			t.Fatalf("Parquet link: %q, %v; want %q", href, err, want)
		}
		if pq := serveDo(t, p, "GET", href, ""); !strings.HasPrefix(pq, "PAR1") || !strings.HasSuffix(pq, "PAR1") {
			t.Fatalf("GET %s: not a Parquet file (%d bytes)", href, len(pq))
		}
	}

	// The next page goes on where it stopped.
	step("next page", 30*time.Second, chromedp.Click(chromedp.ID("q-next")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="q-info"][starts-with(., "page 2")]`)))
	if cells = grid("#q-result"); len(cells) != 7 || cells[0][0] <= want[6][0] {
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
