package archive_test

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/harness/s3test"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// fleetRow is a row of a fleet read: its node, ts, symbol name and size.
type fleetRow struct {
	node int
	ts   int64
	sym  string
	size int64
}

// Two nodes archive a table of one name under prefixes of their own; a
// Fleet opened on their parent reads both as one table, merged by ts
// (equal ts: node order), all symbols or one: the same rows as the two
// local tables merged.
func TestFleetMergesNodesByTs(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	ctx := context.Background()
	dbs := []string{makeTicks(t, 7000, 11), makeTicks(t, 5000, 12)}
	for i, db := range dbs {
		c, err := archive.Dial(fmt.Sprintf("s3://ticks/fleet/node%c", 'A'+i), archive.Config{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := archive.Sync(ctx, c, db, "trades", nil); err != nil {
			t.Fatal(err)
		}
	}
	f, err := archive.OpenFleet(ctx, "s3://ticks/fleet/*", "trades", &archive.ReaderOptions{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if !slices.Equal(f.Nodes, []string{"nodeA", "nodeB"}) {
		t.Fatalf("nodes %v", f.Nodes)
	}
	locals := make([]*reader.Reader, len(dbs))
	for i, db := range dbs {
		r, err := reader.Open(db, "trades", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		locals[i] = r
	}
	size := tickSchema().ColAt(3)
	symc := tickSchema().ColAt(1)
	for _, q := range []struct {
		from, to int64
		sym      string
	}{
		{math.MinInt64, reader.ToEnd, ""},
		{t0 + 10e9, t0 + 40e9, ""},
		{t0 + 5e9, t0 + 60e9, "SC"},
		{t0, reader.ToEnd, "NOPE"},
	} {
		var got []fleetRow
		err := f.Range(ctx, q.from, q.to, q.sym, func(node int, row store.Row) error {
			name, err := f.Readers[node].SymbolName(row.Sym(symc))
			got = append(got, fleetRow{node, row.Ts(), name, row.I64(size)})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		// The archived rows of each local table (the last, raw segment
		// is not in the archive), merged by (ts, node).
		var want []fleetRow
		for i, r := range locals {
			end := f.Readers[i].Manifest().EndSeq
			var it reader.Iter
			if err := r.Range(q.from, q.to, &it); err != nil {
				t.Fatal(err)
			}
			for it.Next() {
				row := it.Row()
				name, _ := r.SymbolName(row.Sym(symc))
				if it.Seq() < end && (q.sym == "" || name == q.sym) {
					want = append(want, fleetRow{i, row.Ts(), name, row.I64(size)})
				}
			}
		}
		slices.SortStableFunc(want, func(a, b fleetRow) int {
			if a.ts != b.ts {
				return cmp.Compare(a.ts, b.ts)
			}
			return a.node - b.node
		})
		if q.sym != "NOPE" && len(want) == 0 {
			t.Fatalf("query %+v: no rows expected: a test that cannot fail", q)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("query %+v: %d rows from the fleet, %d from the local tables merged; first difference at %d", q, len(got), len(want), firstDiff(got, want))
		}
	}
}

func firstDiff(a, b []fleetRow) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// reader.Open takes an archive location once package archive is
// imported, and answers as the local table; a scheme nobody registered
// is an error naming it.
func TestReaderOpenArchiveLocation(t *testing.T) {
	srv := s3test.Start(t, "")
	srv.Bucket(t, "ticks")
	srv.SetEnv(t)
	t.Setenv(archive.CacheDirEnv, t.TempDir())
	db := makeTicks(t, 9000, 5)
	c, err := archive.Dial("s3://ticks/open", archive.Config{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := archive.Sync(context.Background(), c, db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	ar, err := reader.Open("s3://ticks/open", "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ar.Close()
	local, err := reader.Open(db, "trades", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	end := res.Manifest.EndSeq
	if ar.Len() != end || end == 0 {
		t.Fatalf("the archive's reader has %d rows, the manifest %d", ar.Len(), end)
	}
	for seq := uint64(0); seq < end; seq += 97 {
		a, err := ar.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		l, err := local.Get(seq)
		if err != nil {
			t.Fatal(err)
		}
		if string(a) != string(l) {
			t.Fatalf("row %d differs", seq)
		}
	}
	if _, err := reader.Open("gs://ticks/open", "trades", nil); err == nil || !strings.Contains(err.Error(), "no package registered for gs://") {
		t.Fatalf("gs:// location: %v", err)
	}
}
