package archive

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/harness/duckjs"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// The archive's Parquet, read back by a real DuckDB (its Node API, as
// export/duckdb_test.go runs it, from export/testdata/duckdb) straight from
// versitygw's backing directory, against the local table.

// pqSchema is the test tables' schema: size holds a row's id (unique), so
// that every row is told apart.
func pqSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
	)
}

var pqSyms = []string{"AAPL", "MSFT", "BRK.B", "ünïcode", "a,b"}

const pqLateWindow = 2 * time.Minute

// makePqTable writes n rows into a new table "ticks" of db with 64 KiB
// segments (2,048 rows) and a late window, and closes it compacting every
// segment, the last one too (CloseCompacted). Rows start at start, step apart on average; an eighth
// of them are late, up to the window behind the newest, and within the
// window after a midnight half of them are late onto the date before.
// Row i's size is id0+i.
func makePqTable(t *testing.T, db, live string, n int, start int64, step time.Duration, id0 int64, seed uint64) {
	t.Helper()
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: pqSchema(), LiveDir: live, SegmentSize: 64 << 10,
		HotBytes: -1, LateWindow: pqLateWindow})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	s := w.Schema()
	sym, price, size := s.ColAt(1), s.ColAt(2), s.ColAt(3)
	rng := rand.New(rand.NewPCG(seed, 3))
	row := s.NewRow()
	newest := start
	day := int64(24 * time.Hour)
	win := int64(pqLateWindow)
	for i := range n {
		ts := newest
		if mid := newest / day * day; i > 0 && newest-mid < win-1 && rng.IntN(2) == 0 {
			ts = mid - 1 - rng.Int64N(win-(newest-mid)-1) // late, onto the date before
		} else if i > 0 && rng.IntN(8) == 0 {
			ts = newest - rng.Int64N(int64(pqLateWindow)) // late
		} else if i > 0 {
			ts = newest + rng.Int64N(2*int64(step)+1)
		}
		newest = max(newest, ts)
		id, err := w.SymbolString(pqSyms[rng.IntN(len(pqSyms))])
		if err != nil {
			t.Fatal(err)
		}
		row.SetTs(ts)
		row.SetSym(sym, id)
		row.SetF64(price, float64(rng.IntN(100000))/100)
		row.SetI64(size, id0+int64(i))
		if _, err := w.Append(row); err != nil {
			t.Fatalf("row %d: %v", i, err)
		}
		if i%500 == 499 {
			w.Publish()
		}
	}
	if _, err := w.CloseCompacted(0); err != nil {
		t.Fatal(err)
	}
}

// pqRow is one row as the test compares it.
type pqRow struct {
	ts    int64
	sym   string
	price float64
	size  int64
}

// localTable is what the test knows of a local table.
type localTable struct {
	rows   []pqRow     // in time order
	late   uint64      // late rows
	segs   [][2]uint64 // the seq ranges of its compressed segments
	zbytes int64       // the size of their files
}

// localRows reads the table's rows in time order (reader.Range: late rows
// merged in, a path other than the archive's seq walk), and the seq ranges
// of its compressed segments, failing if a segment is not compressed.
func localRows(t *testing.T, db string) (lt localTable) {
	t.Helper()
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	st, err := r.Stat()
	if err != nil {
		t.Fatal(err)
	}
	s := r.Schema()
	var it reader.Iter
	if err := r.Range(math.MinInt64, reader.ToEnd, &it); err != nil {
		t.Fatal(err)
	}
	for it.Next() {
		row := it.Row()
		name, err := r.SymbolName(row.Sym(s.ColAt(1)))
		if err != nil {
			t.Fatal(err)
		}
		lt.rows = append(lt.rows, pqRow{row.Ts(), name, row.F64(s.ColAt(2)), row.I64(s.ColAt(3))})
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	if uint64(len(lt.rows)) != st.Rows {
		t.Fatalf("the table has %d rows, a time-order scan read %d", st.Rows, len(lt.rows))
	}
	for n := st.First / st.SegmentRows; n*st.SegmentRows < st.Rows; n++ {
		fi, err := os.Stat(format.ZSegPath(filepath.Join(db, "ticks"), n))
		if err != nil {
			t.Fatalf("segment %d is not compressed after CloseCompacted: %v", n, err)
		}
		lt.segs = append(lt.segs, [2]uint64{max(n*st.SegmentRows, st.First), min((n+1)*st.SegmentRows, st.Rows)})
		lt.zbytes += fi.Size()
	}
	lt.late = st.Late
	return lt
}

// archiveParquet writes the Parquet of every segment and checks the keys
// against the dates of each segment's rows (read by seq here). cross is
// the rows that fall on an earlier date than a row before them.
func archiveParquet(t *testing.T, c *Client, db string, segs [][2]uint64) (keys []string, cross int) {
	t.Helper()
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	row := r.Schema().NewRow()
	newest := int64(math.MinInt64)
	for _, sg := range segs {
		var want []string
		for seq := sg[0]; seq < sg[1]; seq++ {
			if err := r.ReadRow(seq, row); err != nil {
				t.Fatal(err)
			}
			if dayOf(row.Ts()) < dayOf(newest) {
				cross++
			}
			newest = max(newest, row.Ts())
			k := ParquetKey("ticks", time.Unix(0, row.Ts()).UTC().Format("2006-01-02"), sg[0], sg[1])
			if !slices.Contains(want, k) {
				want = append(want, k)
			}
		}
		slices.Sort(want)
		got, err := writeSegmentParquet(t.Context(), c, db, "ticks", sg[0], sg[1])
		if err != nil {
			t.Fatalf("segment [%d, %d): %v", sg[0], sg[1], err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("segment [%d, %d): keys %q, want %q", sg[0], sg[1], got, want)
		}
		keys = append(keys, got...)
	}
	return keys, cross
}

// pqDial is a client of s3://bucket/prefix on srv.
func pqDial(t *testing.T, srv *s3test.Server, loc string) *Client {
	t.Helper()
	c, err := Dial(loc, Config{Endpoint: srv.Endpoint, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey, Region: s3test.Region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestParquetDuckDB archives the Parquet of every compressed segment of a
// table with late rows, over three UTC dates, and reads it back with
// DuckDB from the server's directory: every row once, each value as the
// local table holds it, ts as TIMESTAMP_NS to the ns, the date partition
// that of the row's ts, and the same aggregates as the local table's.
// Writing the segments again puts the same keys, and the dataset reads
// the same.
func TestParquetDuckDB(t *testing.T) {
	node := duckjs.Node(t)
	srv := s3test.Start(t, "")
	bucket := srv.Bucket(t, "lake")
	db, live := testutil.DB(t)
	// From 23:30 UTC, rows 17.5 s apart on average: 7,000 rows run past the next
	// midnight and the one after, four segments.
	start := time.Date(2024, 3, 8, 23, 30, 0, 0, time.UTC).UnixNano()
	makePqTable(t, db, live, 7000, start, 20*time.Second, 0, 1)
	lt := localRows(t, db)
	// The temporary files go here, so that the test sees them all removed.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	c := pqDial(t, srv, "s3://"+bucket+"/nodeA")
	keys, cross := archiveParquet(t, c, db, lt.segs)
	dates := map[string]bool{}
	for _, k := range keys {
		dates[strings.Split(k, "/")[2]] = true
	}
	if len(lt.segs) < 3 || len(dates) < 3 || lt.late == 0 || cross == 0 {
		t.Fatalf("the table has %d segments over %d dates, %d late rows, %d across a midnight; the test wants several and some",
			len(lt.segs), len(dates), lt.late, cross)
	}
	noTemp(t, tmp)
	pbytes := c.Stats().PutBytes
	t.Logf("%d rows (%d late, %d of them across a midnight) in %d segments: %d Parquet objects, %d bytes (%.1f bytes/row); the .zdat files %d bytes (%.1f bytes/row)",
		len(lt.rows), lt.late, cross, len(lt.segs), len(keys), pbytes, float64(pbytes)/float64(len(lt.rows)),
		lt.zbytes, float64(lt.zbytes)/float64(len(lt.rows)))

	glob := filepath.Join(srv.Root, bucket, "nodeA", "parquet", "table=ticks", "**", "*.parquet")
	checkDuckDB(t, node, glob, lt.rows)

	// Again: the same keys, and no object more.
	before, err := c.List(t.Context(), "parquet/")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := archiveParquet(t, c, db, lt.segs); !slices.Equal(again, keys) {
		t.Fatalf("a second upload put %q, the first %q", again, keys)
	}
	after, err := c.List(t.Context(), "parquet/")
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(before)
	slices.Sort(after)
	if !slices.Equal(before, after) || !slices.Equal(after, sortedCopy(keys)) {
		t.Fatalf("objects after a second upload %q, before %q, keys %q", after, before, keys)
	}
	checkDuckDB(t, node, glob, lt.rows)

	// The server gone: an error that says where, and no file left behind.
	srv.Stop()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	_, err = writeSegmentParquet(ctx, c, db, "ticks", lt.segs[0][0], lt.segs[0][1])
	if err == nil || !strings.Contains(err.Error(), "parquet of ticks rows [0, 2048)") || !strings.Contains(err.Error(), "s3://lake/nodeA/parquet/table=ticks/date=") {
		t.Fatalf("with the server down: %v; want an error naming the rows and the object", err)
	}
	t.Logf("with the server down: %v", err)
	noTemp(t, tmp)
}

// noTemp fails t if dir holds anything.
func noTemp(t *testing.T, dir string) {
	t.Helper()
	if ents, err := os.ReadDir(dir); err != nil || len(ents) > 0 {
		t.Fatalf("%s holds %d files (%v), want none left", dir, len(ents), err)
	}
}

// TestParquetBadRange: rows the table does not hold are an error that
// says which, before anything is written.
func TestParquetBadRange(t *testing.T) {
	db, live := testutil.DB(t)
	makePqTable(t, db, live, 100, time.Date(2024, 3, 8, 12, 0, 0, 0, time.UTC).UnixNano(), time.Second, 0, 1)
	// No server: nothing may be put.
	c, err := Dial("s3://lake/x", Config{Endpoint: "http://127.0.0.1:1", AccessKey: "k", SecretKey: "s"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		first, end uint64
		want       string
	}{
		{5, 5, "archive: parquet of ticks rows [5, 5): an empty range"},
		{50, 101, "archive: parquet of ticks rows [50, 101): the table holds rows [0, 100)"},
	} {
		_, err := writeSegmentParquet(t.Context(), c, db, "ticks", tc.first, tc.end)
		if err == nil || err.Error() != tc.want {
			t.Errorf("rows [%d, %d): %v, want %q", tc.first, tc.end, err, tc.want)
		}
	}
	if _, err := writeSegmentParquet(t.Context(), c, db, "nope", 0, 1); err == nil || !strings.Contains(err.Error(), "archive: parquet of nope rows [0, 1): ") {
		t.Errorf("a table that is not there: %v", err)
	}
	if st := c.Stats(); st.Puts != 0 {
		t.Errorf("%d puts, want none", st.Puts)
	}
}

func sortedCopy(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// checkDuckDB reads the Parquet under glob with DuckDB and compares it
// with rows.
func checkDuckDB(t *testing.T, node, glob string, rows []pqRow) {
	t.Helper()
	src := fmt.Sprintf("read_parquet(%s, hive_partitioning = true)", duckjs.SQLString(glob))
	got := duckjs.Run(t, node,
		"SET TimeZone = 'America/New_York'", // ts must not depend on the session's zone
		"SELECT typeof(ts), epoch_ns(ts), sym, price, size, CAST(date AS VARCHAR), typeof(date), \"table\" FROM "+src+" ORDER BY size",
		"SELECT count(*), sum(size), min(epoch_ns(ts)), max(epoch_ns(ts)), count(DISTINCT date) FROM "+src,
		"SELECT sym, count(*) FROM "+src+" GROUP BY sym ORDER BY sym",
	)
	for i, res := range got.Results {
		if res.Error != "" {
			t.Fatalf("DuckDB, query %d: %s", i, res.Error)
		}
	}
	all := got.Results[1]
	t.Logf("DuckDB %s read %d rows", got.Version, len(all.Rows))
	if len(all.Rows) != len(rows) {
		t.Fatalf("DuckDB read %d rows, the table has %d", len(all.Rows), len(rows))
	}
	want := slices.Clone(rows)
	slices.SortFunc(want, func(a, b pqRow) int { return int(a.size - b.size) })
	bad := 0
	for i, dr := range all.Rows {
		w := want[i]
		g := fmt.Sprintf("%v %v %v %v %v %v %v %v", dr...)
		e := fmt.Sprintf("TIMESTAMP_NS %d %s %016x %d %s DATE ticks", w.ts, w.sym, math.Float64bits(w.price), w.size,
			time.Unix(0, w.ts).UTC().Format("2006-01-02"))
		if g != e {
			t.Errorf("row %d: DuckDB has %q, want %q", i, g, e)
			if bad++; bad == 5 {
				t.FailNow()
			}
		}
	}
	// Aggregates against the local table's.
	var sum, minTs, maxTs int64 = 0, rows[0].ts, rows[0].ts
	dates := map[string]bool{}
	perSym := map[string]int{}
	for _, r := range rows {
		sum += r.size
		minTs, maxTs = min(minTs, r.ts), max(maxTs, r.ts)
		dates[time.Unix(0, r.ts).UTC().Format("2006-01-02")] = true
		perSym[r.sym]++
	}
	agg := fmt.Sprintf("%v %v %v %v %v", got.Results[2].Rows[0]...)
	if e := fmt.Sprintf("%d %d %d %d %d", len(rows), sum, minTs, maxTs, len(dates)); agg != e {
		t.Errorf("DuckDB's count, sum(size), min and max ts, dates: %s, the table's %s", agg, e)
	}
	var gotSyms, wantSyms []string
	for _, dr := range got.Results[3].Rows {
		gotSyms = append(gotSyms, fmt.Sprintf("%v=%v", dr...))
	}
	for _, s := range sortedKeys(perSym) {
		wantSyms = append(wantSyms, fmt.Sprintf("%s=%d", s, perSym[s]))
	}
	if !slices.Equal(gotSyms, wantSyms) {
		t.Errorf("DuckDB's rows per symbol %v, the table's %v", gotSyms, wantSyms)
	}
}

func sortedKeys(m map[string]int) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	slices.Sort(k) // DuckDB's ORDER BY on VARCHAR: byte order
	return k
}

// TestParquetFleet is the lakehouse side of several nodes archiving into
// one bucket, each under its own prefix (s3://lake/fleet/nodeA,
// s3://lake/fleet/nodeB): one glob over the nodes reads every node's rows of
// a table, and the path tells the node. Node B's table is sparse, rows
// hours apart, so that its first segment spans more dates than one pass
// writes (parquetDates).
func TestParquetFleet(t *testing.T) {
	node := duckjs.Node(t)
	srv := s3test.Start(t, "")
	bucket := srv.Bucket(t, "lake")
	start := time.Date(2024, 3, 8, 20, 0, 0, 0, time.UTC).UnixNano()
	nodes := []struct {
		name string
		n    int
		step time.Duration
		id0  int64
		rows []pqRow
	}{
		{name: "nodeA", n: 3000, step: 20 * time.Second, id0: 0},
		{name: "nodeB", n: 2500, step: 3 * time.Hour, id0: 1 << 40},
	}
	var all []pqRow
	for i := range nodes {
		nd := &nodes[i]
		db, live := testutil.DB(t)
		makePqTable(t, db, live, nd.n, start, nd.step, nd.id0, uint64(10+i))
		lt := localRows(t, db)
		segs := lt.segs
		keys, _ := archiveParquet(t, pqDial(t, srv, "s3://"+bucket+"/fleet/"+nd.name), db, segs)
		nd.rows = lt.rows
		first := 0
		for _, k := range keys {
			if strings.HasSuffix(k, fmt.Sprintf("%020d-%020d.parquet", segs[0][0], segs[0][1])) {
				first++
			}
		}
		t.Logf("%s: %d rows, %d segments, %d objects, %d for the first segment", nd.name, len(lt.rows), len(segs), len(keys), first)
		if nd.name == "nodeB" && first <= parquetDates {
			t.Fatalf("node B's first segment spans %d dates; the test wants more than %d", first, parquetDates)
		}
		all = append(all, lt.rows...)
	}
	root := filepath.Join(srv.Root, bucket, "fleet")
	checkDuckDB(t, node, filepath.Join(root, "*", "parquet", "table=ticks", "**", "*.parquet"), all)

	// Per node, from the file's path.
	src := fmt.Sprintf("read_parquet(%s, hive_partitioning = true, filename = true)",
		duckjs.SQLString(filepath.Join(root, "*", "parquet", "table=ticks", "**", "*.parquet")))
	got := duckjs.Run(t, node, "SELECT split_part(filename, '/', "+strconv.Itoa(len(strings.Split(root, "/"))+1)+
		") AS node, count(*), min(size), max(size) FROM "+src+" GROUP BY node ORDER BY node")
	if got.Results[0].Error != "" {
		t.Fatalf("DuckDB: %s", got.Results[0].Error)
	}
	var g, w []string
	for _, dr := range got.Results[0].Rows {
		g = append(g, fmt.Sprintf("%v %v %v %v", dr...))
	}
	for _, nd := range nodes {
		w = append(w, fmt.Sprintf("%s %d %d %d", nd.name, len(nd.rows), nd.id0, nd.id0+int64(nd.n)-1))
	}
	if !slices.Equal(g, w) {
		t.Errorf("DuckDB's rows per node %q, want %q", g, w)
	}
}
