// Package csegtest holds test helpers over compressed segment files that
// several packages' tests share (it imports cseg, which package testutil
// cannot: cseg's own tests import testutil).
package csegtest

import (
	"bytes"
	"math"
	"os"
	"testing"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// RewriteV1 rewrites compressed segment n of the table at dir (schema s,
// rps rows a segment) in format version 1, as a table compacted by an
// older tickdb holds it.
func RewriteV1(t testing.TB, dir string, s *store.Schema, n, rps uint64) {
	t.Helper()
	path := format.ZSegPath(dir, n)
	head, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	h := cseg.Header{SegNo: n, RowSize: s.RowSize, RowsPerSeg: rps, LateWindow: math.MaxInt64}
	copy(h.TableID[:], head[16:32])
	z, err := cseg.Open(path, s, h)
	if err != nil {
		t.Fatal(err)
	}
	var rows, dst []byte
	for b := range z.Blocks() {
		if dst, err = z.Block(b, dst); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, dst...)
	}
	h.Rows = z.Rows()
	z.Close()
	var buf bytes.Buffer
	if _, err := cseg.EncodeV1(&buf, s, h, rows, path); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".v1", buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(path+".v1", path); err != nil {
		t.Fatal(err)
	}
}
