package main

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/tickdb/tickdb/ingest"
	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// TestConsoleSQLBrowser drives the console of tickdb serve --sql in a real
// headless Chromium against a real tickdb-sql: the Query panel offers its
// SQL mode, runs a statement into the results grid, and shows a syntax
// error with its position. (cmd/tickdb's TestConsoleBrowser covers the
// panel without --sql.)
func TestConsoleSQLBrowser(t *testing.T) {
	exe := os.Getenv("CHROMIUM")
	for _, n := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if exe == "" {
			exe, _ = exec.LookPath(n)
		}
	}
	if exe == "" {
		testutil.Need(t, "no chromium on PATH (apt-get install chromium, or set CHROMIUM)")
	}
	db := table(t)
	addr := startSQL(t, db, "")
	srv, err := ingest.Start(&ingest.Options{DB: db, ILPAddr: "off", HTTPAddr: "127.0.0.1:0", LiveRoot: t.TempDir(), SQLAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox, chromedp.WindowSize(1280, 1000))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	defer acancel()
	bctx, bcancel := chromedp.NewContext(actx)
	defer bcancel()
	// The browser lives as long as the context of its first action: bctx.
	if err := chromedp.Do(bctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatal(err)
	}
	step := func(what string, actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, 60*time.Second)
		defer cancel()
		if err := chromedp.Do(ctx, actions...); err != nil {
			t.Fatalf("%s: %v", what, err)
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
	step("open the console, switch the Query panel to SQL",
		chromedp.Navigate("http://"+srv.HTTPAddr().String()+"/"),
		chromedp.WaitVisible(chromedp.ID("q-modes")),
		chromedp.Click(chromedp.CSS(`input[name="q-mode"][value="sql"]`)),
		chromedp.WaitVisible(chromedp.ID("q-sql")))
	step("run a statement",
		chromedp.SetValue(chromedp.ID("q-sql"), "SELECT sym, count(*) AS n, sum(size) AS volume FROM trades GROUP BY sym ORDER BY sym"),
		chromedp.Click(chromedp.CSS(`#sql-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="sql-info"][contains(., "2 rows")]`)))
	grid := text("#q-result")
	for _, want := range []string{"sym", "volume", "AAPL", "400", "MSFT", "200"} {
		if !strings.Contains(grid, want) {
			t.Fatalf("results grid %q lacks %q", grid, want)
		}
	}
	step("a syntax error",
		chromedp.SetValue(chromedp.ID("q-sql"), "SELEC * FROM trades"),
		chromedp.Click(chromedp.CSS(`#sql-form button[type=submit]`)),
		chromedp.WaitVisible(chromedp.Search(`//span[@id="sql-info"][contains(., "syntax error")]`)))
	info := text("#sql-info")
	if !strings.Contains(info, "(at character 1)") {
		t.Fatalf("error shown as %q, want its position", info)
	}
}
