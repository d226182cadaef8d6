package ingest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// TestHTTPQueryParquet: GET /query with format=parquet is the query's
// rows as one Parquet file, an attachment, token-guarded; read back with
// the library the export's tests use, every row is GET /query's.
func TestHTTPQueryParquet(t *testing.T) {
	srv, _ := testServer(t, &Options{ILPAddr: "off", Token: "s3cret"})
	auth := []string{"Authorization", "Bearer s3cret"}
	var b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&b, "pq,sym=%s px=%d.25,n=%di,ok=%t %d\n", []string{"A", "B", `C\ D`}[i%3], i, i*7, i%2 == 0, 1_700_000_000_000_000_000+int64(i/2)*1000)
	}
	if code, resp, _ := httpDo(t, srv, "POST", "/write", b.String(), auth...); code != http.StatusNoContent {
		t.Fatalf("write: %d %s", code, resp)
	}
	if code, resp, _ := httpDo(t, srv, "GET", "/query?table=pq&format=parquet", ""); code != http.StatusUnauthorized {
		t.Fatalf("no token: %d %s, want 401", code, resp)
	}
	for _, q := range []string{"table=pq", "table=pq&sym=C+D&from=1700000000000100000&limit=700", "table=pq&sym=nope"} {
		t.Run(q, func(t *testing.T) {
			code, body, hdr := httpDo(t, srv, "GET", "/query?"+q+"&format=parquet", "", auth...)
			if code != 200 || hdr.Get("Content-Type") != "application/vnd.apache.parquet" || hdr.Get("Content-Disposition") != `attachment; filename="pq.parquet"` {
				t.Fatalf("%d %v %.200s", code, hdr, body)
			}
			pf, err := parquet.OpenFile(bytes.NewReader([]byte(body)), int64(len(body)))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			buf := make([]parquet.Row, 256)
			for _, rg := range pf.RowGroups() {
				rr := rg.Rows()
				for {
					n, err := rr.ReadRows(buf)
					for _, row := range buf[:n] {
						got = append(got, fmt.Sprintf("%d %s %v %d %t", row[0].Int64(), row[1].ByteArray(), row[2].Double(), row[3].Int64(), row[4].Boolean()))
					}
					if err != nil {
						break
					}
				}
				rr.Close()
			}
			code, js, _ := httpDo(t, srv, "GET", "/query?"+q+"&ts=ns", "", auth...)
			if code != 200 {
				t.Fatalf("json: %d %s", code, js)
			}
			var want []string
			dec := json.NewDecoder(strings.NewReader(js))
			for dec.More() {
				var row struct {
					Ts  int64
					Sym string
					Px  float64
					N   int64
					Ok  bool
				}
				if err := dec.Decode(&row); err != nil {
					t.Fatal(err)
				}
				want = append(want, strconv.FormatInt(row.Ts, 10)+" "+row.Sym+" "+fmt.Sprint(row.Px)+" "+strconv.FormatInt(row.N, 10)+" "+strconv.FormatBool(row.Ok))
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("%d parquet rows, %d json rows; first differing:\n%v\n%v", len(got), len(want), got[:min(3, len(got))], want[:min(3, len(want))])
			}
			if q == "table=pq" && len(want) != 3000 || q != "table=pq&sym=nope" && len(want) == 0 {
				t.Fatalf("%d rows", len(want))
			}
			if s := pf.Schema().String(); !strings.Contains(s, "TIMESTAMP(isAdjustedToUTC=false,unit=NANOS)") {
				t.Errorf("schema:\n%s", s)
			}
		})
	}
	for _, tc := range []struct {
		path string
		code int
	}{
		{"/query?table=nope&format=parquet", 404},
		{"/query?table=pq&format=parquet&limit=-1", 400},
	} {
		if code, resp, _ := httpDo(t, srv, "GET", tc.path, "", auth...); code != tc.code {
			t.Errorf("%s: %d %s, want %d", tc.path, code, resp, tc.code)
		}
	}
}
