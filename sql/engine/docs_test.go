package engine

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestDocsSQL runs every statement of docs/SQL.md's sql blocks over small
// trades and quotes tables: the page's idioms parse, bind and run.
func TestDocsSQL(t *testing.T) {
	page, err := os.ReadFile("../../docs/SQL.md")
	if err != nil {
		t.Fatal(err)
	}
	db := t.TempDir()
	base := time.Date(2024, 1, 2, 14, 30, 0, 0, time.UTC).UnixNano()
	writeTicks(t, db, "trades", []tick{{base, "AAPL", 189.5, 100}, {base + 61e9, "AAPL", 190, 20000}, {base + 62e9, "MSFT", 410, 300}})
	writeTicks(t, db, "quotes", []tick{{base - 1, "AAPL", 189.4, 0}, {base + 60e9, "MSFT", 409.9, 0}})
	// quotes: the tick schema's price and size stand for bid and ask.
	e, err := Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	blocks := regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(page), -1)
	if len(blocks) < 6 {
		t.Fatalf("%d sql blocks in docs/SQL.md", len(blocks))
	}
	n := 0
	for _, b := range blocks {
		for _, stmt := range strings.Split(b[1], ";") {
			var lines []string
			for _, l := range strings.Split(stmt, "\n") {
				if i := strings.Index(l, "--"); i >= 0 {
					l = l[:i]
				}
				lines = append(lines, l)
			}
			q := strings.TrimSpace(strings.Join(lines, "\n"))
			if q == "" {
				continue
			}
			// The page's quotes have bid and ask; the test's tick-schema quotes
			// have price and size.
			q = strings.NewReplacer("q.bid", "q.price AS bid", "q.ask", "q.size AS ask", "ask - bid", "size - price", "ask + bid", "size + price").Replace(q)
			rows, err := e.DB().Query(q)
			if err != nil {
				t.Errorf("docs/SQL.md: %s\n%v", q, err)
				continue
			}
			for rows.Next() {
			}
			if err := rows.Err(); err != nil {
				t.Errorf("docs/SQL.md: %s\n%v", q, err)
			}
			rows.Close()
			n++
		}
	}
	t.Logf("%d statements", n)
}
