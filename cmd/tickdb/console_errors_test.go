package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// TestConsoleFromAfterTo: the console's Query panel with a from after its
// to shows the server's error, naming both times, where an empty result
// used to stand; an unknown symbol's empty page names the nearest symbols. Without a browser it skips, unless under CI.
func TestConsoleFromAfterTo(t *testing.T) {
	exe := chromiumPath()
	if exe == "" {
		testutil.Need(t, "no chromium on PATH (apt-get install chromium, or set CHROMIUM)")
	}
	db, live := testutil.DB(t)
	p := startServe(t, "--db", db, "--live-dir", live)
	serveDo(t, p, "POST", "/write", "trades,sym=AAPL price=1.5,size=1i 1704205800000000000\ntrades,sym=AAPL price=2.5,size=2i 1704205801000000000\n")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox)
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil { // the browser lives as long as bctx
		t.Fatalf("starting %s: %v", exe, err)
	}
	ctx, cancel := context.WithTimeout(bctx, time.Minute)
	defer cancel()
	const want = "from 2024-01-02T14:30:01Z is after to 2024-01-02T14:30:00Z"
	err := chromedp.Do(ctx, chromedp.Navigate("http://"+p.http+"/"),
		chromedp.WaitReady(chromedp.CSS(`#q-table option[value="trades"]`)),
		chromedp.SetValue(chromedp.ID("q-table"), "trades"),
		chromedp.SetValue(chromedp.ID("q-from"), "2024-01-02T14:30:01Z"),
		chromedp.SetValue(chromedp.ID("q-to"), "2024-01-02T14:30:00Z"),
		chromedp.Click(chromedp.CSS("#query-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="status"][contains(., "`+want+`")]`)))
	if err != nil {
		s, _ := chromedp.Run(bctx, chromedp.Text(chromedp.ID("status")))
		t.Fatalf("console query with from after to: %v; status %q, want %q\nserve log:\n%s", err, s, want, p.logText())
	}
	if s, err := chromedp.Run(ctx, chromedp.Text(chromedp.ID("status"))); err != nil || !strings.Contains(s, want) {
		t.Fatalf("status %q %v", s, err)
	}

	// An unknown symbol: no rows, and the panel says so with the nearest
	// name (the server's Tickdb-Warning header).
	const wantSym = `no rows: no symbol "AAPX" in table trades; nearest: AAPL`
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('q-from').value = ''; document.getElementById('q-to').value = ''; 'cleared'`)); err != nil {
		t.Fatal(err)
	}
	err = chromedp.Do(ctx,
		chromedp.SetValue(chromedp.ID("q-sym"), "AAPX"),
		chromedp.Click(chromedp.CSS("#query-form button[type=submit]")),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="q-info"][contains(., '`+wantSym+`')]`)))
	if err != nil {
		s, _ := chromedp.Run(bctx, chromedp.Text(chromedp.ID("q-info")))
		t.Fatalf("console query of an unknown symbol: %v; q-info %q, want %q", err, s, wantSym)
	}
}
