package ingest

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/reader"
)

func TestDbgSame(t *testing.T) {
	srv, db := testServer(t, &Options{ILPAddr: "off"})
	url := "http://" + srv.HTTPAddr().String() + "/write"
	client := &http.Client{Timeout: time.Minute}
	for _, n := range []int{10, 100000} {
		code, msg, err := post(client, url, gzipLines(n, func(dst []byte, _ int) []byte { return append(dst, "same,sym=A v=1\n"...) }), true)
		t.Log(code, msg, err)
		code, msg, err = post(client, url, strings.NewReader(strings.Repeat("same,sym=A v=1\n", n)), false)
		t.Log(code, msg, err)
		r, _ := reader.Open(db, "same", nil)
		t.Log(r.Len())
		r.Close()
	}
}
