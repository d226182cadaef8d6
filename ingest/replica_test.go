package ingest

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/reader"
)

// Rows written as line protocol by query's ilp encoder (what tail and query
// --format ilp print) come back identical through this server: the replica
// path of SPEC §5, with symbols that need every escape, missing values and
// all column types.
func TestILPOutputRoundTrips(t *testing.T) {
	src, srcDB := testServer(t, &Options{ILPAddr: "off"})
	body := strings.Join([]string{
		`rt,sym=New\ York,venue=a\,b\=c px=1.5,qty=10i,ok=t 1000`,
		`rt,sym=back\\slash,venue=x px=-2e-7,qty=-3i,ok=f 2000`,
		`rt,sym=plain qty=7i 3000`,
		`rt,venue=only px=100 4000`,
	}, "\n") + "\n"
	if code, resp, _ := httpDo(t, src, "POST", "/write", body); code != http.StatusNoContent {
		t.Fatalf("%d %s", code, resp)
	}
	r, err := reader.Open(srcDB, "rt", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var ilp bytes.Buffer
	enc := query.NewEncoder(&ilp, query.FormatILP, query.TsNs, r.Schema(), "rt", r.SymbolName)
	if _, err := query.Run(context.Background(), r, query.Query{Table: "rt"}, enc); err != nil {
		t.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		t.Fatal(err)
	}
	dst, dstDB := testServer(t, &Options{ILPAddr: "off"})
	if code, resp, _ := httpDo(t, dst, "POST", "/write", ilp.String()); code != http.StatusNoContent {
		t.Fatalf("replaying\n%s: %d %s", ilp.String(), code, resp)
	}
	want := tableRows(t, srcDB, "rt", 4, 5*time.Second)
	got := tableRows(t, dstDB, "rt", 4, 5*time.Second)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("replica rows:\n%s\nsource rows:\n%s\nvia:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), ilp.String())
	}
}
