package ingest

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/writer"
)

// TestSecondServerRefused: a second Server on a database a live one holds
// fails at once, naming the holder's pid, and takes nothing (the first
// goes on storing); once the first is closed, a new one starts.
func TestSecondServerRefused(t *testing.T) {
	srv, db := testServer(t, nil)
	write(t, srv, "t,sym=A price=1 1000\n")
	second, err := Start(&Options{DB: db, ILPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0"})
	if err == nil {
		second.Close()
		t.Fatal("a second server started on a held database")
	}
	var se *ServingError
	if !errors.As(err, &se) || se.Pid != os.Getpid() || !errors.Is(err, writer.ErrLocked) {
		t.Fatalf("second server: %v (%T), want a *ServingError naming pid %d", err, err, os.Getpid())
	}
	if !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("message %q does not name the pid", err)
	}
	write(t, srv, "t,sym=A price=2 2000\n") // the first still writes
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	third, err := Start(&Options{DB: db, ILPAddr: "127.0.0.1:0", HTTPAddr: "127.0.0.1:0", LiveRoot: srv.opts.LiveRoot})
	if err != nil {
		t.Fatalf("start after the first closed: %v", err)
	}
	if got := tableRows(t, db, "t", 2, 0); len(got) != 2 {
		t.Fatalf("rows %v", got)
	}
	if err := third.Close(); err != nil {
		t.Fatal(err)
	}
}

func write(t *testing.T, srv *Server, body string) {
	t.Helper()
	if code, msg, _ := httpDo(t, srv, "POST", "/write", body); code != 204 {
		t.Fatalf("POST /write: %d %s", code, msg)
	}
}

// TestILPExposureWithToken: with a token, a TCP address beyond loopback is
// refused (ErrILPExposed) unless ILPInsecure; loopback, "off" and no
// token are fine.
func TestILPExposureWithToken(t *testing.T) {
	for _, tc := range []struct {
		addr, token string
		insecure    bool
		refused     bool
	}{
		{"0.0.0.0:0", "tok", false, true},
		{":0", "tok", false, true},
		{"[::]:0", "tok", false, true},
		{"0.0.0.0:0", "tok", true, false},
		{"127.0.0.1:0", "tok", false, false},
		{"localhost:0", "tok", false, false},
		{"off", "tok", false, false},
		{"0.0.0.0:0", "", false, false},
	} {
		err := checkILPExposure(tc.addr, tc.token, tc.insecure)
		if got := errors.Is(err, ErrILPExposed); got != tc.refused {
			t.Errorf("%+v: err %v, want refused=%v", tc, err, tc.refused)
		}
	}
	// Start itself refuses, before it takes the database or a port.
	db := t.TempDir()
	srv, err := Start(&Options{DB: db, ILPAddr: "0.0.0.0:0", HTTPAddr: "127.0.0.1:0", Token: "tok"})
	if err == nil {
		srv.Close()
		t.Fatal("Start took an exposed TCP listener with a token set")
	}
	if !errors.Is(err, ErrILPExposed) || !strings.Contains(err.Error(), "--ilp-insecure") {
		t.Fatalf("Start: %v", err)
	}
}
