package archive_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The reader side of the archive: another process opens the archived
// table from the server alone and answers every query as the local table
// does.

// rdSchema is the tick schema with a second sym column (an exchange tag)
// and a bool, so that every column kind goes through the archive.
func rdSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "venue", Type: store.TypeSym},
		store.Column{Name: "buy", Type: store.TypeBool},
	)
}

const (
	rdRows    = 300_000
	rdSyms    = 100
	rdStepNs  = int64(10 * time.Millisecond)
	rdSegSize = 2 << 20 // 2 MiB of 48-byte rows: 32,768 rows a segment
)

var rdT0 = time.Date(2024, 3, 8, 22, 0, 0, 0, time.UTC).UnixNano()

// rdTable writes rdRows ticks of rdSyms symbols (skewed: a few busy ones,
// many quiet) into table name of database db, with late rows (about one
// in 50, inside a 1 s window) or none, and closes it, which compresses
// every segment (the last, partial one too: more than 4,096 rows).
func rdTable(t testing.TB, db, live, name string, late bool) {
	t.Helper()
	o := &writer.Options{Schema: rdSchema(), LiveDir: live, SegmentSize: rdSegSize, HotBytes: -1}
	if late {
		o.LateWindow = time.Second
	}
	w, err := writer.Open(db, name, o)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(7, uint64(len(name))))
	s := w.Schema()
	row := s.NewRow()
	var venues [3]uint32
	for i, v := range []string{"XNAS", "ARCX", "BATS"} {
		if venues[i], err = w.SymbolString(v); err != nil {
			t.Fatal(err)
		}
	}
	for i := range rdRows {
		ts := rdT0 + int64(i)*rdStepNs
		if late && rng.IntN(50) == 0 {
			ts -= rng.Int64N(int64(800 * time.Millisecond))
		}
		k := rng.IntN(rdSyms)
		if rng.IntN(2) == 0 {
			k = rng.IntN(5) // busy symbols
		}
		id, err := w.SymbolString(fmt.Sprintf("S%03d", k))
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(ts)
		row.SetSym(s.ColAt(1), id)
		row.SetF64(s.ColAt(2), 100+float64(rng.IntN(10000))/100)
		row.SetI64(s.ColAt(3), int64(1+rng.IntN(500)))
		row.SetSym(s.ColAt(4), venues[rng.IntN(3)])
		row.SetBool(s.ColAt(5), rng.IntN(2) == 0)
		if _, err := w.Append(row); err != nil {
			t.Fatal(err)
		}
		if i%4096 == 4095 {
			w.Publish()
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// rdQuery is one query of the differential suite, over table "trades"
// (late rows) or "quotes" (none), or both (as-of): it hashes its answer
// with h.
type rdQuery struct {
	name string
	run  func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error
}

// rdTables are the suite's tables.
var rdTables = []string{"trades", "quotes"}

// rdQueries is the suite for seed: full scans, one-symbol and all-symbol
// windows of every size (1 % ones among them), bars, latest at several
// times, as-of joins, newest-first, and rows by seq.
func rdQueries(seed uint64, tmin, tmax int64, rows uint64) []rdQuery {
	rng := rand.New(rand.NewPCG(seed, 3))
	span := tmax - tmin
	sym := func() string {
		if rng.IntN(4) == 0 {
			return ""
		}
		if rng.IntN(10) == 0 {
			return "NOPE"
		}
		return fmt.Sprintf("S%03d", rng.IntN(rdSyms))
	}
	win := func() (int64, int64) {
		w := span / int64([]int{100, 100, 20, 3, 1}[rng.IntN(5)])
		from := tmin - span/50 + rng.Int64N(span+span/25)
		return from, from + w
	}
	rowsHash := func(h func([]byte)) func(store.Row) error {
		return func(row store.Row) error { h(row); return nil }
	}
	var qs []rdQuery
	add := func(name string, run func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error) {
		qs = append(qs, rdQuery{name, run})
	}
	// tab picks the table of the next query: l reads "trades", r
	// "quotes".
	tab := func() (string, func(l, r *reader.Reader) *reader.Reader) {
		if rng.IntN(2) == 0 {
			return "trades", func(l, _ *reader.Reader) *reader.Reader { return l }
		}
		return "quotes", func(_, r *reader.Reader) *reader.Reader { return r }
	}
	for _, name := range rdTables {
		add("scan "+name, func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error {
			rd := l
			if name == "quotes" {
				rd = r
			}
			_, err := query.RunFunc(ctx, rd, query.Query{Table: name}, rowsHash(h))
			return err
		})
	}
	for i := range 28 {
		from, to := win()
		name, rd := tab()
		q := query.Query{Table: name, Sym: sym(), From: from, To: to, HasFrom: rng.IntN(8) != 0, HasTo: rng.IntN(8) != 0}
		if i == 0 {
			q.Sym, q.HasFrom, q.HasTo = "S001", false, false // a whole symbol
		}
		if rng.IntN(5) == 0 {
			q.Limit = 1 + rng.Int64N(1000)
		}
		add(fmt.Sprintf("window-%d %+v", i, q), func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error {
			_, err := query.RunFunc(ctx, rd(l, r), q, rowsHash(h))
			return err
		})
	}
	for i := range 4 {
		name, rd := tab()
		q := query.Query{Table: name, Sym: sym(), Desc: true, Limit: 1 + rng.Int64N(200)}
		add(fmt.Sprintf("desc-%d %+v", i, q), func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error {
			_, err := query.RunFunc(ctx, rd(l, r), q, rowsHash(h))
			return err
		})
	}
	for i := range 6 {
		from, to := win()
		name, rd := tab()
		q := query.BarsQuery{Table: name, Sym: sym(), From: from, To: to, HasFrom: true, HasTo: i != 0,
			Interval: []time.Duration{time.Second, time.Minute, 7 * time.Minute}[rng.IntN(3)], Field: "price", Volume: "size"}
		add(fmt.Sprintf("bars-%d %+v", i, q), func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error {
			_, err := query.Bars(ctx, rd(l, r), q, func(b *query.Bar) error { h(fmt.Appendf(nil, "%+v", *b)); return nil })
			return err
		})
	}
	for i := range 10 {
		name, rd := tab()
		q := query.LatestQuery{Table: name, At: tmin + rng.Int64N(span+span/10), HasAt: i%5 != 0}
		if i%5 == 4 {
			q.At = tmin - 1 // before every row
		}
		if rng.IntN(3) == 0 {
			q.Syms = []string{sym(), sym(), "S000"}
		}
		add(fmt.Sprintf("latest-%d %+v", i, q), func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error {
			_, err := query.Latest(ctx, rd(l, r), q, rowsHash(h))
			return err
		})
	}
	for i := range 3 {
		from, to := win()
		q := query.AsOfQuery{Left: "trades", Right: "quotes", Sym: sym(), From: from, To: to, HasFrom: true, HasTo: true,
			Tolerance: time.Duration(rng.Int64N(int64(2 * time.Second))), HasTolerance: i == 1}
		if q.Sym == "" {
			q.To = q.From + span/100
		}
		add(fmt.Sprintf("asof-%d %+v", i, q), func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error {
			_, err := query.AsOf(ctx, l, r, q, func(a, b store.Row) error {
				h(a)
				if b == nil {
					h([]byte("nil"))
				} else {
					h(b)
				}
				return nil
			})
			return err
		})
	}
	seqs := make([]uint64, 300)
	for i := range seqs {
		seqs[i] = rng.Uint64N(rows)
	}
	add("get", func(ctx context.Context, l, r *reader.Reader, h func([]byte)) error {
		for i, s := range seqs {
			rd := l
			if i%2 == 1 {
				rd = r
			}
			row, err := rd.Get(s)
			if err != nil {
				return err
			}
			h(row)
		}
		return nil
	})
	return qs
}

// rdRun runs q and returns the hash of its answer and how many pieces
// (rows, bars, pairs) it had.
func rdRun(ctx context.Context, q rdQuery, l, r *reader.Reader) (string, int, error) {
	sum := sha256.New()
	n := 0
	err := q.run(ctx, l, r, func(b []byte) {
		n++
		fmt.Fprintf(sum, "%d:", len(b))
		sum.Write(b)
	})
	return hex.EncodeToString(sum.Sum(nil)[:12]), n, err
}

// rdOneSym1pc is the one-symbol window over 1 % of the table's time,
// in its middle.
func rdOneSym1pc(table string, tmin, tmax int64) query.Query {
	span := tmax - tmin
	from := tmin + span/2
	return query.Query{Table: table, Sym: "S042", From: from, To: from + span/100, HasFrom: true, HasTo: true}
}

// rdWindow runs rdOneSym1pc over rd.
func rdWindow(ctx context.Context, rd *reader.Reader, table string, tmin, tmax int64) (string, int, error) {
	return rdRun(ctx, rdQuery{run: func(ctx context.Context, l, _ *reader.Reader, h func([]byte)) error {
		_, err := query.RunFunc(ctx, l, rdOneSym1pc(table, tmin, tmax), func(row store.Row) error { h(row); return nil })
		return err
	}}, rd, nil)
}

// TestArchiveReader archives a table, computes the suite's answers on the
// local table, removes the database, and has another process (with no
// access to it) open the table from the server alone and answer the suite:
// every answer must be the local one. The child also reports the traffic
// of a one-symbol 1 % window on a cold cache (far below the archive's
// size), and a second child with a small cache bound checks that the
// cache directory stays within it while it answers the suite again.
func TestArchiveReader(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	db, live := testutil.DB(t)
	rdTable(t, db, live, "trades", true)
	rdTable(t, db, live, "quotes", false)
	ctx := context.Background()
	c, err := archive.Dial("s3://ticks/node-a", archive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	var total, maxSeg int64
	var m *archive.Manifest
	for _, name := range rdTables {
		res, err := archive.Sync(ctx, c, db, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		m = res.Manifest
		if len(m.Segments) < 8 {
			t.Fatalf("%d segments archived, want at least 8 for the test to mean something", len(m.Segments))
		}
		for _, s := range m.Segments {
			total += s.Size
			maxSeg = max(maxSeg, s.Size)
		}
	}

	l, err := reader.Open(db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	r, err := reader.Open(db, "quotes", nil)
	if err != nil {
		t.Fatal(err)
	}
	if l.Len() != m.EndSeq || r.Len() != m.EndSeq {
		t.Fatalf("the tables have %d and %d rows, the archive %d: every row should be archived", l.Len(), r.Len(), m.EndSeq)
	}
	snap, err := l.Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	first, err := l.Get(0)
	if err != nil {
		t.Fatal(err)
	}
	tmin, tmax := first.Ts(), snap.LastTs
	seed := testutil.Seed(t, 0)
	qs := rdQueries(seed, tmin, tmax, l.Len())
	want := make([]string, len(qs))
	nonEmpty := 0
	for i, q := range qs {
		h, n, err := rdRun(ctx, q, l, r)
		if err != nil {
			t.Fatalf("local %s: %v", q.name, err)
		}
		want[i] = fmt.Sprintf("%s/%d", h, n)
		if n > 0 {
			nonEmpty++
		}
	}
	if nonEmpty < len(qs)*2/3 {
		t.Fatalf("only %d of %d queries have answers: the suite tests little", nonEmpty, len(qs))
	}
	// The one-symbol 1 % windows, local: their rows, for the child's
	// to match.
	var win [2]string
	for i, rd := range []*reader.Reader{l, r} {
		h, n, err := rdWindow(ctx, rd, rdTables[i], tmin, tmax)
		if err != nil || n == 0 {
			t.Fatalf("local one-symbol window of %s: %d rows, %v", rdTables[i], n, err)
		}
		win[i] = fmt.Sprintf("%s/%d", h, n)
	}
	l.Close()
	r.Close()
	// The other process sees the server only.
	if err := os.RemoveAll(db); err != nil {
		t.Fatal(err)
	}

	env := append(srv.Env(),
		"RD_LOC=s3://ticks/node-a",
		"RD_SEED="+strconv.FormatUint(seed, 10),
		"RD_TMIN="+strconv.FormatInt(tmin, 10),
		"RD_TMAX="+strconv.FormatInt(tmax, 10),
		"RD_ROWS="+strconv.FormatUint(m.EndSeq, 10))
	check := func(ch *testutil.Child, who string) {
		for i, q := range qs {
			f := ch.Expect(t, "q", 2*time.Minute, nil)
			if len(f) < 2 || f[0] != strconv.Itoa(i) {
				t.Fatalf("%s: line %v, want query %d", who, f, i)
			}
			if f[1] != want[i] {
				t.Errorf("%s: %s: archive answer %s, local %s", who, q.name, f[1], want[i])
			}
		}
	}

	// A cold cache: the one-symbol window's traffic, then the suite.
	cache := t.TempDir()
	ch := testutil.StartChild(t, "TestChildArchiveReader", "suite", &testutil.ChildOptions{
		Env: append(env, "RD_CACHE="+cache, "RD_CACHE_BYTES=0")})
	for i, name := range rdTables {
		f := ch.Expect(t, "window", 2*time.Minute, nil)
		if len(f) != 5 || f[0] != name {
			t.Fatalf("window line %v", f)
		}
		gets, _ := strconv.ParseInt(f[2], 10, 64)
		bytes, _ := strconv.ParseInt(f[3], 10, 64)
		if f[1] != win[i] {
			t.Fatalf("one-symbol 1 %% window of %s: archive answer %s, local %s", name, f[1], win[i])
		}
		t.Logf("%s: one-symbol 1 %% window, cold cache: %s rows, %d requests, %d bytes of the table's archived %d in %d segments (%s)",
			name, f[1][strings.Index(f[1], "/")+1:], gets, bytes, total/2, len(m.Segments), f[4])
		// The window lies in one or two segments of ten: their header
		// and tables, and the symbol's blocks there (with late rows,
		// also a seek's probes: a row of another symbol, its block
		// each), never whole objects. The table's objects are half
		// the total.
		if bytes <= 0 || bytes > total/8 {
			t.Errorf("%s: one-symbol 1 %% window fetched %d bytes, want more than none and at most a quarter of the table's %d", name, bytes, total/2)
		}
	}
	check(ch, "suite")
	ch.Expect(t, "done", time.Minute, nil)

	// Two processes at once on one cold cache: each fetches what the
	// other has not, and reads what it has (the chunk marks).
	shared := t.TempDir()
	var two []*testutil.Child
	for range 2 {
		two = append(two, testutil.StartChild(t, "TestChildArchiveReader", "suite", &testutil.ChildOptions{
			Env: append(env, "RD_CACHE="+shared, "RD_CACHE_BYTES=0")}))
	}
	for i, ch := range two {
		ch.Expect(t, "window", 2*time.Minute, nil)
		ch.Expect(t, "window", 2*time.Minute, nil)
		check(ch, fmt.Sprintf("shared cache, process %d", i))
		ch.Expect(t, "done", time.Minute, nil)
	}

	// A small cache: the bound holds while the suite runs, segments
	// evicted and fetched again as needed.
	small := t.TempDir()
	limit := total / 3
	ch = testutil.StartChild(t, "TestChildArchiveReader", "suite", &testutil.ChildOptions{
		Env: append(env, "RD_CACHE="+small, "RD_CACHE_BYTES="+strconv.FormatInt(limit, 10))})
	ch.Expect(t, "window", 2*time.Minute, nil)
	ch.Expect(t, "window", 2*time.Minute, nil)
	check(ch, "small cache")
	f := ch.Expect(t, "done", time.Minute, nil)
	peak, _ := strconv.ParseInt(f[0], 10, 64)
	t.Logf("small cache: bound %d, peak %d bytes in the cache directory, largest segment %d", limit, peak, maxSeg)
	if peak > limit+maxSeg || peak == 0 {
		t.Errorf("the cache directory took %d bytes, more than its bound %d and a segment (%d)", peak, limit, maxSeg)
	}
	if peak <= limit/2 {
		t.Errorf("the cache directory took at most %d bytes of a %d bound: the suite should have filled it", peak, limit)
	}
}

// TestChildArchiveReader is TestArchiveReader's other process.
func TestChildArchiveReader(t *testing.T) {
	testutil.ChildRole(t, "suite")
	ctx := context.Background()
	seed := testutil.EnvUint(t, "RD_SEED")
	tmin, _ := strconv.ParseInt(testutil.EnvString(t, "RD_TMIN"), 10, 64)
	tmax, _ := strconv.ParseInt(testutil.EnvString(t, "RD_TMAX"), 10, 64)
	rows := testutil.EnvUint(t, "RD_ROWS")
	dir := testutil.EnvString(t, "RD_CACHE")
	limit, _ := strconv.ParseInt(testutil.EnvString(t, "RD_CACHE_BYTES"), 10, 64)
	loc := testutil.EnvString(t, "RD_LOC")
	o := &archive.ReaderOptions{CacheDir: dir, CacheBytes: limit}
	open := func(table string) *archive.Reader {
		r, err := archive.OpenReader(ctx, loc, table, o)
		if err != nil {
			testutil.ChildFatalf(t, "open %s: %v", table, err)
		}
		return r
	}
	var peak int64
	usage := func() {
		b, _, err := archive.CacheUsage(dir)
		if err != nil {
			testutil.ChildFatalf(t, "cache usage: %v", err)
		}
		peak = max(peak, b)
	}

	l, r := open("trades"), open("quotes")
	for _, x := range []*archive.Reader{l, r} {
		name := x.Manifest().Table
		st0 := x.Client().Stats()
		start := time.Now()
		h, n, err := rdWindow(ctx, x.Reader, name, tmin, tmax)
		if err != nil {
			testutil.ChildFatalf(t, "one-symbol window of %s: %v", name, err)
		}
		d := x.Client().Stats().Sub(st0)
		testutil.Report("window %s %s/%d %d %d %s", name, h, n, d.Gets, d.GetBytes, strings.ReplaceAll(time.Since(start).String(), " ", ""))
		usage()
	}

	// The suite, each query in a reader of its own (as the CLI runs
	// them) every other time, the same two readers otherwise.
	for i, q := range rdQueries(seed, tmin, tmax, rows) {
		ll, rr := l, r
		if i%2 == 1 {
			ll, rr = open("trades"), open("quotes")
		}
		h, n, err := rdRun(ctx, q, ll.Reader, rr.Reader)
		if err != nil {
			testutil.ChildFatalf(t, "%s: %v", q.name, err)
		}
		usage()
		if ll != l {
			ll.Close()
			rr.Close()
			usage()
		}
		testutil.Report("q %d %s/%d", i, h, n)
	}
	l.Close()
	r.Close()
	usage()
	// One view a table, shared by every reader of its manifest.
	views, _ := filepath.Glob(filepath.Join(dir, "*", "*", "*", "views", "*[0-9a-f]"))
	if len(views) != 2 {
		testutil.ChildFatalf(t, "view directories %v, want the manifest's one", views)
	}
	testutil.Report("done %d", peak)
}

// TestArchiveReaderRefresh: a Reader sees the manifest it opened; the
// next OpenReader sees the segments archived since, in a view of its own,
// and the older view goes once no Reader holds it. A missing table is
// named as such.
func TestArchiveReaderRefresh(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	db, live := testutil.DB(t)
	rdTable(t, db, live, "quotes", false)
	ctx := context.Background()
	c, err := archive.Dial("s3://ticks/n", archive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := archive.OpenReader(ctx, "s3://ticks/n", "quotes", &archive.ReaderOptions{Client: c, CacheDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), `no table "quotes"`) {
		t.Fatalf("a table not archived: %v", err)
	}
	if _, err := archive.Sync(ctx, c, db, "quotes", &archive.SyncOptions{MaxSegments: 3}); err != nil {
		t.Fatal(err)
	}
	local, err := reader.Open(db, "quotes", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	cache := t.TempDir()
	o := &archive.ReaderOptions{Client: c, CacheDir: cache}
	views := func() int {
		v, _ := filepath.Glob(filepath.Join(cache, "*", "quotes", "*", "views", "*[0-9a-f]"))
		return len(v)
	}
	same := func(r *archive.Reader, n uint64) {
		t.Helper()
		if r.Len() != n {
			t.Fatalf("archive reader has %d rows, want %d", r.Len(), n)
		}
		for _, s := range []uint64{0, n / 2, n - 1} {
			a, err := r.Get(s)
			if err != nil {
				t.Fatal(err)
			}
			b, err := local.Get(s)
			if err != nil {
				t.Fatal(err)
			}
			if string(a) != string(b) {
				t.Fatalf("row %d differs", s)
			}
		}
	}
	old, err := archive.OpenReader(ctx, "s3://ticks/n", "quotes", o)
	if err != nil {
		t.Fatal(err)
	}
	part := 3 * local.SegmentRows()
	same(old, part)
	if _, err := archive.Sync(ctx, c, db, "quotes", nil); err != nil {
		t.Fatal(err)
	}
	same(old, part) // the manifest it opened
	r, err := archive.OpenReader(ctx, "s3://ticks/n", "quotes", o)
	if err != nil {
		t.Fatal(err)
	}
	same(r, local.Len())
	if views() != 2 {
		t.Fatalf("%d views, want the old one (held) and the new one", views())
	}
	old.Close()
	r.Close()
	r, err = archive.OpenReader(ctx, "s3://ticks/n", "quotes", o)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	same(r, local.Len())
	if views() != 1 {
		t.Fatalf("%d views once the old one is not held, want 1", views())
	}
}
