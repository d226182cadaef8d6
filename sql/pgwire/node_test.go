package pgwire

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// node-postgres (pg, pinned in ../testdata/node/package.json and
// package-lock.json) runs a parameterised query. As in
// ingest/clients_test.go: node_modules is installed with "npm ci" from the
// lock file when missing (CI runs npm ci beforehand); without node the
// test skips, or fails when CI is set.

const (
	nodeDir      = "../testdata/node"
	nodeTimeout  = 30 * time.Second
	npmCITimeout = 3 * time.Minute
)

// nodeBin returns the node binary with nodeDir/node_modules installed.
func nodeBin(t *testing.T) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		testutil.Need(t, "node is not on PATH; install Node.js 16 or later with npm to run the node-postgres test")
	}
	if _, err := os.Stat(filepath.Join(nodeDir, "node_modules")); errors.Is(err, os.ErrNotExist) {
		npm, err := exec.LookPath("npm")
		if err != nil {
			t.Fatalf("%s/node_modules is missing and npm is not on PATH to install it (npm ci)", nodeDir)
		}
		ctx, cancel := context.WithTimeout(t.Context(), npmCITimeout)
		defer cancel()
		out, err := exec.CommandContext(ctx, npm, "ci", "--prefix", nodeDir, "--no-audit", "--no-fund").CombinedOutput()
		if err != nil {
			t.Fatalf("npm ci --prefix %s: %v\n%s", nodeDir, err, out)
		}
	} else if err != nil {
		t.Fatal(err)
	}
	return node
}

func TestNodePostgres(t *testing.T) {
	node := nodeBin(t)
	b := newTestBackend(t)
	srv := startServer(t, b, Options{Token: testToken})
	host, portStr, _ := strings.Cut(srv.Addr().String(), ":")
	port, _ := strconv.Atoi(portStr)
	arg, err := json.Marshal(map[string]any{
		"host": host, "port": port, "password": testToken,
		"sql":    "SELECT ts, sym, price, size, flag FROM trades WHERE size > $1 AND sym <> $2 ORDER BY ts",
		"params": []any{0, "MSFT"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), nodeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "query.js", string(arg))
	cmd.Dir = nodeDir
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node query.js: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	var got struct {
		Version  string
		Command  string
		RowCount int
		Fields   []struct {
			Name string
			OID  uint32
		}
		Rows  []map[string]any
		Error struct{ Code, Position, Message string }
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("node printed %q: %v", stdout.Bytes(), err)
	}
	t.Logf("pg %s", got.Version)
	if got.Command != "SELECT" || got.RowCount != 1 {
		t.Errorf("command %q, %d rows; want SELECT, 1", got.Command, got.RowCount)
	}
	var fields []string
	for _, f := range got.Fields {
		fields = append(fields, f.Name+":"+strconv.Itoa(int(f.OID)))
	}
	if s := strings.Join(fields, " "); s != "ts:1114 sym:25 price:701 size:20 flag:16" {
		t.Errorf("fields %s", s)
	}
	// node-postgres parses float8 and bool; int8 stays a string (it may
	// not fit a JavaScript number); ts is the server's text.
	want := []map[string]any{{"ts": "2023-11-14 22:13:20.123456789", "sym": "AAPL", "price": 189.5, "size": "100", "flag": true}}
	if !reflect.DeepEqual(got.Rows, want) {
		t.Errorf("rows %v, want %v", got.Rows, want)
	}
	if got.Error.Code != "42601" || got.Error.Position != "15" || got.Error.Message != `syntax error at or near "trades"` {
		t.Errorf("error %+v, want 42601 at 15", got.Error)
	}
}
