// Package duckjs runs SQL in DuckDB through its Node API for the tests
// that check tickdb's Parquet with a real DuckDB (export's, the
// archive's): the install in export/testdata/duckdb (package-lock.json
// pins the version; .ci/run does `npm ci --prefix export/testdata/duckdb`)
// and its scripts, query.js (results) and timed.js (timings).
package duckjs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// Dir is the directory of the install and the scripts.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "export", "testdata", "duckdb")
}

// Node is the node binary to run the scripts with. It skips t (fails it
// when CI is set) without node or the installed package.
func Node(t testing.TB) string {
	t.Helper()
	missing := func(msg string) {
		testutil.Need(t, msg+"; the DuckDB check needs Node.js and `npm ci --prefix export/testdata/duckdb` (as .ci/run does)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		missing("node is not on PATH")
	}
	pkg := filepath.Join(Dir(), "node_modules", "@duckdb", "node-api")
	if _, err := os.Stat(filepath.Join(pkg, "package.json")); err != nil {
		missing(fmt.Sprintf("%s is not installed (%v)", pkg, err))
	}
	return node
}

// Out is what query.js prints: the DuckDB version, then per query the
// column names and types or the error, and the rows.
type Out struct {
	Version string
	Results []struct {
		Error          string
		Columns, Types []string
		Rows           []Row
	}
}

// Row is one row of a query.js result: BIGINT and HUGEINT as decimal
// strings, DOUBLE as the 16 hex digits of its bits, NULL as nil.
type Row []any

// Str is column i, a string.
func (r Row) Str(t testing.TB, i int) string {
	t.Helper()
	s, ok := r[i].(string)
	if !ok {
		t.Fatalf("column %d is %#v, want a string", i, r[i])
	}
	return s
}

// I64 is column i, a BIGINT.
func (r Row) I64(t testing.TB, i int) int64 {
	t.Helper()
	v, err := strconv.ParseInt(r.Str(t, i), 10, 64)
	if err != nil {
		t.Fatalf("column %d: %v", i, err)
	}
	return v
}

// F64 is column i, a DOUBLE as query.js spells it, or "NULL".
func (r Row) F64(t testing.TB, i int) string {
	t.Helper()
	if r[i] == nil {
		return "NULL"
	}
	return r.Str(t, i)
}

// Run runs queries with query.js (node from Node) and decodes what it
// prints.
func Run(t testing.TB, node string, queries ...string) *Out {
	t.Helper()
	var out Out
	run(t, node, &out, "query.js", queries)
	if len(out.Results) != len(queries) {
		t.Fatalf("node query.js answered %d queries of %d", len(out.Results), len(queries))
	}
	return &out
}

// Timed is what timed.js prints: per query the milliseconds of each run
// and the last run's rows, every value as DuckDB prints it.
type Timed struct {
	Results []struct {
		Ms   []float64
		Rows [][]string
	}
}

// Time runs each query reps times in one DuckDB with timed.js.
func Time(t testing.TB, node string, reps int, queries ...string) *Timed {
	t.Helper()
	var out Timed
	run(t, node, &out, "timed.js", queries, strconv.Itoa(reps))
	if len(out.Results) != len(queries) {
		t.Fatalf("node timed.js answered %d queries of %d", len(out.Results), len(queries))
	}
	return &out
}

func run(t testing.TB, node string, out any, script string, queries []string, args ...string) {
	t.Helper()
	arg, err := json.Marshal(queries)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append(append([]string{script}, args...), string(arg))...)
	cmd.Dir = Dir()
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstderr:\n%s", script, err, stderr.Bytes())
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("node %s printed %q: %v", script, stdout.Bytes(), err)
	}
}

// SQLString is s as an SQL string literal.
func SQLString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
