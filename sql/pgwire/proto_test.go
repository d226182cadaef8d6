package pgwire

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
)

// The tests here speak the protocol message by message through pgproto3's
// client side, for what drivers do not let a test choose: row limits on
// Execute, named portals, messages discarded after an error, Flush
// without Sync, CancelRequest secrets.

// rawClient is one protocol-level client connection.
type rawClient struct {
	t      *testing.T
	nc     net.Conn
	fe     *pgproto3.Frontend
	pid    uint32
	secret []byte
}

func rawConnect(t *testing.T, srv *Server, preamble ...pgproto3.FrontendMessage) *rawClient {
	t.Helper()
	nc, err := net.Dial("tcp", srv.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	_ = nc.SetDeadline(time.Now().Add(30 * time.Second))
	c := &rawClient{t: t, nc: nc, fe: pgproto3.NewFrontend(nc, nc)}
	for _, m := range preamble {
		c.fe.Send(m)
		if err := c.fe.Flush(); err != nil {
			t.Fatal(err)
		}
		var b [1]byte
		if _, err := nc.Read(b[:]); err != nil || b[0] != 'N' {
			t.Fatalf("answer to %T: %q, %v; want N", m, b, err)
		}
	}
	c.send(&pgproto3.StartupMessage{ProtocolVersion: pgproto3.ProtocolVersion30, Parameters: map[string]string{"user": "u", "database": "db"}})
	for _, m := range c.until('Z') {
		if k, ok := m.(*pgproto3.BackendKeyData); ok {
			c.pid, c.secret = k.ProcessID, append([]byte(nil), k.SecretKey...)
		}
	}
	if c.pid == 0 || len(c.secret) != 4 {
		t.Fatalf("no BackendKeyData: pid %d secret %x", c.pid, c.secret)
	}
	return c
}

func (c *rawClient) send(msgs ...pgproto3.FrontendMessage) {
	c.t.Helper()
	for _, m := range msgs {
		c.fe.Send(m)
	}
	if err := c.fe.Flush(); err != nil {
		c.t.Fatal(err)
	}
}

// until receives messages up to and including one of type typ ('Z' for
// ReadyForQuery), and returns them summarized by describe.
func (c *rawClient) until(typ byte) []pgproto3.BackendMessage {
	c.t.Helper()
	var out []pgproto3.BackendMessage
	for {
		m, err := c.fe.Receive()
		if err != nil {
			c.t.Fatalf("receive: %v (after %s)", err, summarize(out))
		}
		out = append(out, copyMsg(m))
		if msgType(m) == typ {
			return out
		}
	}
}

// copyMsg copies what summarize needs: Receive reuses its messages.
func copyMsg(m pgproto3.BackendMessage) pgproto3.BackendMessage {
	switch x := m.(type) {
	case *pgproto3.DataRow:
		vals := make([][]byte, len(x.Values))
		for i, v := range x.Values {
			if v != nil {
				vals[i] = append([]byte{}, v...)
			}
		}
		return &pgproto3.DataRow{Values: vals}
	case *pgproto3.RowDescription:
		fields := append([]pgproto3.FieldDescription(nil), x.Fields...)
		for i := range fields {
			fields[i].Name = append([]byte{}, fields[i].Name...)
		}
		return &pgproto3.RowDescription{Fields: fields}
	case *pgproto3.CommandComplete:
		return &pgproto3.CommandComplete{CommandTag: append([]byte{}, x.CommandTag...)}
	case *pgproto3.ErrorResponse:
		e := *x
		return &e
	case *pgproto3.ParameterDescription:
		return &pgproto3.ParameterDescription{ParameterOIDs: append([]uint32(nil), x.ParameterOIDs...)}
	case *pgproto3.ReadyForQuery:
		return &pgproto3.ReadyForQuery{TxStatus: x.TxStatus}
	}
	return m
}

func msgType(m pgproto3.BackendMessage) byte {
	b, _ := m.Encode(nil)
	return b[0]
}

// summarize writes messages compactly: "T(range:20/1) D(0000000000000001)
// s C(SELECT 3) Z(I)"; printable values as 'text', others in hex.
func summarize(msgs []pgproto3.BackendMessage) string {
	var parts []string
	for _, m := range msgs {
		switch x := m.(type) {
		case *pgproto3.RowDescription:
			var f []string
			for _, fd := range x.Fields {
				f = append(f, fmt.Sprintf("%s:%d/%d", fd.Name, fd.DataTypeOID, fd.Format))
			}
			parts = append(parts, "T("+strings.Join(f, ",")+")")
		case *pgproto3.DataRow:
			var v []string
			for _, b := range x.Values {
				switch {
				case b == nil:
					v = append(v, "NULL")
				case strings.IndexFunc(string(b), func(r rune) bool { return r < 0x20 || r >= 0x7f }) >= 0:
					v = append(v, fmt.Sprintf("%x", b))
				default:
					v = append(v, "'"+string(b)+"'")
				}
			}
			parts = append(parts, "D("+strings.Join(v, ",")+")")
		case *pgproto3.CommandComplete:
			parts = append(parts, "C("+string(x.CommandTag)+")")
		case *pgproto3.ErrorResponse:
			parts = append(parts, fmt.Sprintf("E(%s@%d)", x.Code, x.Position))
		case *pgproto3.ParameterDescription:
			parts = append(parts, fmt.Sprintf("t%v", x.ParameterOIDs))
		case *pgproto3.ReadyForQuery:
			parts = append(parts, "Z("+string(x.TxStatus)+")")
		default:
			parts = append(parts, string(msgType(m)))
		}
	}
	return strings.Join(parts, " ")
}

func int8Param(v int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(v)) }

func TestProtocol(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	for _, tc := range []struct {
		name string
		msgs []pgproto3.FrontendMessage
		want string
	}{
		{"empty-query", []pgproto3.FrontendMessage{&pgproto3.Query{String: " ; -- nothing\n"}},
			"I Z(I)"},
		{"statements-with-semicolons-in-strings", []pgproto3.FrontendMessage{&pgproto3.Query{String: `SELECT 'a;b' AS x; /* ; */ SELECT $$c;d$$ AS "y;"`}},
			"T(x:25/0) D('a;b') C(SELECT 1) T(y;:25/0) D('c;d') C(SELECT 1) Z(I)"},
		{"error-stops-the-rest", []pgproto3.FrontendMessage{&pgproto3.Query{String: "SELECT 1::INTEGER AS a; SELEC 2; SELECT 3"}},
			"T(a:23/0) D('1') C(SELECT 1) E(42601@25) Z(I)"},
		{"named-portal-with-row-limit", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Name: "s1", Query: "SELECT range AS r FROM range($1::BIGINT)", ParameterOIDs: []uint32{oidInt8}},
			&pgproto3.Describe{ObjectType: 'S', Name: "s1"},
			&pgproto3.Bind{DestinationPortal: "p1", PreparedStatement: "s1", ParameterFormatCodes: []int16{1},
				Parameters: [][]byte{int8Param(5)}, ResultFormatCodes: []int16{1}},
			&pgproto3.Execute{Portal: "p1", MaxRows: 2},
			&pgproto3.Execute{Portal: "p1", MaxRows: 2},
			&pgproto3.Execute{Portal: "p1"},
			&pgproto3.Sync{}},
			"1 t[20] T(r:20/0) 2 D(0000000000000000) D(0000000000000001) s D(0000000000000002) D(0000000000000003) s D(0000000000000004) C(SELECT 5) Z(I)"},
		{"unnamed-text-parameter-of-no-declared-type", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "SELECT sym FROM trades WHERE size = $1 AND sym LIKE $2"},
			&pgproto3.Describe{ObjectType: 'S'},
			&pgproto3.Bind{Parameters: [][]byte{[]byte("100"), []byte("AA%")}},
			&pgproto3.Describe{ObjectType: 'P'},
			&pgproto3.Execute{},
			&pgproto3.Sync{}},
			"1 t[0 0] T(sym:25/0) 2 T(sym:25/0) D('AAPL') C(SELECT 1) Z(I)"},
		{"error-discards-until-sync", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "SELECT * FORM trades"},
			&pgproto3.Describe{ObjectType: 'S'},
			&pgproto3.Bind{},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
			&pgproto3.Query{String: "SELECT 1::SMALLINT AS one"}},
			"1 t[] E(42601@15) Z(I)"},
		{"empty-prepared-statement", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Query: "  "}, &pgproto3.Bind{}, &pgproto3.Describe{ObjectType: 'P'}, &pgproto3.Execute{}, &pgproto3.Sync{}},
			"1 2 n I Z(I)"},
		{"close-and-flush", []pgproto3.FrontendMessage{
			&pgproto3.Parse{Name: "c", Query: "SELECT 1"}, &pgproto3.Close{ObjectType: 'S', Name: "c"},
			&pgproto3.Close{ObjectType: 'P', Name: "nope"}, &pgproto3.Bind{PreparedStatement: "c"}, &pgproto3.Flush{}},
			"1 3 3 E(26000@0)"},
		{"transaction-status", []pgproto3.FrontendMessage{&pgproto3.Query{String: "BEGIN; SELECT nosuch"}, &pgproto3.Query{String: "SELECT 1"},
			&pgproto3.Query{String: "ROLLBACK"}, &pgproto3.Query{String: "SELECT 1::INTEGER AS one"}},
			"C(BEGIN) E(42703@15) Z(E) E(25P02@0) Z(E) C(ROLLBACK) Z(I) T(one:23/0) D('1') C(SELECT 1) Z(I)"},
		{"command-tags", []pgproto3.FrontendMessage{&pgproto3.Query{String: `CREATE TABLE t1(a INTEGER); INSERT INTO t1 VALUES (1), (2);
			UPDATE t1 SET a = a + 1; INSERT INTO t1 VALUES (9) RETURNING a; DELETE FROM t1; DROP TABLE t1`}},
			"C(CREATE TABLE) C(INSERT 0 2) C(UPDATE 2) T(a:23/0) D('9') C(INSERT 0 1) C(DELETE 3) C(DROP TABLE) Z(I)"},
		{"insert-returning-described", []pgproto3.FrontendMessage{
			&pgproto3.Query{String: "CREATE TABLE t2(a INTEGER)"},
			&pgproto3.Parse{Query: "INSERT INTO t2 VALUES ($1) RETURNING a * 2 AS twice", ParameterOIDs: []uint32{oidInt4}},
			&pgproto3.Describe{ObjectType: 'S'},
			&pgproto3.Bind{Parameters: [][]byte{[]byte("21")}},
			&pgproto3.Execute{},
			&pgproto3.Sync{},
			&pgproto3.Query{String: "SELECT count(*)::INTEGER AS n FROM t2"}},
			"C(CREATE TABLE) Z(I) 1 t[23] T(twice:23/0) 2 D('42') C(INSERT 0 1) Z(I) T(n:23/0) D('1') C(SELECT 1) Z(I)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := rawConnect(t, srv)
			c.send(tc.msgs...)
			var got []pgproto3.BackendMessage
			wantZ := strings.Count(tc.want, "Z(")
			if wantZ == 0 {
				got = c.until('E')
			}
			for range wantZ {
				got = append(got, c.until('Z')...)
			}
			if s := summarize(got); s != tc.want {
				t.Errorf("got  %s\nwant %s", s, tc.want)
			}
		})
	}
}

// TestSSLRequest: SSLRequest and GSSEncRequest are answered N, then the
// startup goes on in the clear.
func TestSSLRequest(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	c := rawConnect(t, srv, &pgproto3.GSSEncRequest{}, &pgproto3.SSLRequest{})
	c.send(&pgproto3.Query{String: "SELECT 'ok' AS s"})
	if s := summarize(c.until('Z')); s != "T(s:25/0) D('ok') C(SELECT 1) Z(I)" {
		t.Errorf("got %s", s)
	}
}

// TestCancelRequest: a CancelRequest with the wrong secret does nothing;
// with the right one the running query ends with 57014.
func TestCancelRequest(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	c := rawConnect(t, srv)
	c.send(&pgproto3.Query{String: "SELECT count(*) FROM range(10000000000)"})
	time.Sleep(200 * time.Millisecond)
	cancel := func(pid uint32, secret []byte) {
		nc, err := net.Dial("tcp", srv.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		fe := pgproto3.NewFrontend(nc, nc)
		fe.Send(&pgproto3.CancelRequest{ProcessID: pid, SecretKey: secret})
		if err := fe.Flush(); err != nil {
			t.Fatal(err)
		}
		// The server closes a cancel connection without a word.
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := nc.Read(make([]byte, 1)); n != 0 || err == nil || isTimeout(err) {
			t.Errorf("cancel connection: read %d, %v; want EOF", n, err)
		}
	}
	wrong := append([]byte(nil), c.secret...)
	wrong[0] ^= 1
	cancel(c.pid, wrong)
	cancel(c.pid+1, c.secret)
	_ = c.nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if m, err := c.fe.Receive(); err == nil || !isTimeout(err) {
		t.Fatalf("after wrong cancels the query answered: %T %v", m, err)
	}
	// A timed-out read leaves the frontend unusable: read the rest raw.
	_ = c.nc.SetReadDeadline(time.Now().Add(15 * time.Second))
	cancel(c.pid, c.secret)
	fe := pgproto3.NewFrontend(c.nc, c.nc)
	c.fe = fe
	got := summarize(c.until('Z'))
	if got != "E(57014@0) Z(I)" {
		t.Errorf("after the cancel: %s", got)
	}
}

// TestHangupDuringQuery: a client that disconnects while its query runs
// and returns nothing yet (so no write can fail) has the query cancelled
// by the hang-up watch.
func TestHangupDuringQuery(t *testing.T) {
	b := newTestBackend(t)
	srv := startServer(t, b, Options{})
	c := rawConnect(t, srv)
	c.send(&pgproto3.Query{String: "SELECT count(*) FROM range(10000000000)"})
	sess := b.lastSession(t)
	var qctx interface{ Done() <-chan struct{} }
	for deadline := time.Now().Add(10 * time.Second); qctx == nil; time.Sleep(10 * time.Millisecond) {
		sess.mu.Lock()
		if len(sess.ctxs) > 0 {
			qctx = sess.ctxs[len(sess.ctxs)-1]
		}
		sess.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatal("the query did not start")
		}
	}
	time.Sleep(100 * time.Millisecond)
	c.nc.Close()
	select {
	case <-qctx.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the query went on after the client hung up")
	}
	select {
	case <-sess.closed:
	case <-time.After(10 * time.Second):
		t.Fatal("the session was not closed")
	}
}
