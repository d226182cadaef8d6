package export_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
	"github.com/tickdb/tickdb/writer"
)

// TestMain fails the package if a test leaves a goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testSchema has every column type, two sym columns and two f64 columns.
func testSchema() *store.Schema {
	return store.MustSchema(
		store.Column{Name: "ts", Type: store.TypeTs},
		store.Column{Name: "sym", Type: store.TypeSym},
		store.Column{Name: "price", Type: store.TypeF64},
		store.Column{Name: "size", Type: store.TypeI64},
		store.Column{Name: "venue", Type: store.TypeSym},
		store.Column{Name: "bid", Type: store.TypeF64},
		store.Column{Name: "buy", Type: store.TypeBool},
	)
}

// testSyms are symbol names with the characters CSV and Parquet readers
// trip on.
var testSyms = []string{"AAPL", "MSFT", "BRK.B", "a,b", `q"uote`, "sp ace", "ünïcode", "", " lead", "X"}

var testVenues = []string{"XNAS", "XNYS", "BATS"}

// trow is one expected row, decoded.
type trow struct {
	ts         int64
	sym, venue string
	price, bid float64
	size       int64
	buy        bool
}

// t0 is the first row's ts: a Friday evening, so the rows span four UTC
// dates.
var t0 = time.Date(2024, 3, 8, 18, 0, 0, 0, time.UTC).UnixNano()

// makeTable writes n random rows (genRows) into a new table "ticks"
// (small segments, so that the export crosses many) and returns the
// database directory and the rows.
func makeTable(t testing.TB, n int, span time.Duration, seed uint64) (string, []trow) {
	t.Helper()
	db, live := testutil.DB(t)
	w := openWriter(t, db, live, 0)
	rows := genRows(n, span, seed, t0)
	if err := appendRows(w, rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return db, rows
}

// openWriter opens (creating) table "ticks" with 64 KiB segments and
// liveSlots live slots (0: the default).
func openWriter(t testing.TB, db, live string, liveSlots int) *writer.Writer {
	t.Helper()
	w, err := writer.Open(db, "ticks", &writer.Options{Schema: testSchema(), LiveDir: live, SegmentSize: 64 << 10, LiveSlots: liveSlots, HotBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// genRows makes n random rows spanning about span from start. Some f64
// values are NaN (missing), some the floats that catch a lossy round-trip
// (-0, the smallest subnormal, ±Inf, the largest float); ts has ties.
func genRows(n int, span time.Duration, seed uint64, start int64) []trow {
	rng := rand.New(rand.NewPCG(seed, 7))
	specials := []float64{math.Copysign(0, -1), 5e-324, math.Inf(1), math.Inf(-1), math.MaxFloat64, -1e-300}
	f64 := func() float64 {
		switch r := rng.IntN(20); {
		case r < 2:
			return math.NaN()
		case r == 2:
			return specials[rng.IntN(len(specials))]
		default:
			return math.Round(rng.Float64()*1e6) / 1e4 * float64(1-2*rng.IntN(2))
		}
	}
	rows := make([]trow, n)
	step := int64(span) / int64(max(n, 1)) * 2
	ts := start
	for i := range rows {
		if rng.IntN(10) > 0 {
			ts += rng.Int64N(step + 1)
		}
		rows[i] = trow{
			ts: ts, sym: testSyms[rng.IntN(len(testSyms))], venue: testVenues[rng.IntN(len(testVenues))],
			price: f64(), bid: f64(), size: int64(rng.Uint64()), buy: rng.IntN(2) == 1,
		}
	}
	return rows
}

// appendRows appends rows to w, publishing every 1000 rows and at the
// end.
func appendRows(w *writer.Writer, rows []trow) error {
	s := w.Schema()
	cols := make([]store.Col, len(s.Cols))
	for i := range s.Cols {
		cols[i] = s.ColAt(i)
	}
	row := s.NewRow()
	for i, r := range rows {
		sid, err := w.SymbolString(r.sym)
		if err != nil {
			return err
		}
		vid, err := w.SymbolString(r.venue)
		if err != nil {
			return err
		}
		row.SetTs(r.ts)
		row.SetSym(cols[1], sid)
		row.SetF64(cols[2], r.price)
		row.SetI64(cols[3], r.size)
		row.SetSym(cols[4], vid)
		row.SetF64(cols[5], r.bid)
		row.SetBool(cols[6], r.buy)
		if _, err := w.Append(row); err != nil {
			return fmt.Errorf("row %d: %w", i, err)
		}
		if i%1000 == 999 {
			w.Publish()
		}
	}
	w.Publish()
	return nil
}

// openTicks opens the test table.
func openTicks(t testing.TB, db string) *reader.Reader {
	t.Helper()
	r, err := reader.Open(db, "ticks", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// dateOf is a ts's UTC date.
func dateOf(ts int64) string { return time.Unix(0, ts).UTC().Format("2006-01-02") }

// sameFloat reports whether two floats are the same bits, or both NaN.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	return math.Float64bits(a) == math.Float64bits(b)
}
