package main

// Running the CLI from tests: in this process, or as a separate process
// (this test binary re-executed as tickdb, see TestMain).

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/child"
)

// runCLI runs the CLI in-process and returns its exit status and output.
func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// execCLI runs the CLI as a separate process (this test binary re-executed
// as tickdb, see TestMain) and returns its exit status and output.
func execCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	return execCLIEnv(t, nil, args...)
}

// execCLIEnv is execCLI with more environment.
func execCLIEnv(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	c := startCLIChildEnv(t, args, env, strings.NewReader(""), &out, &errb)
	err := c.Wait(time.Minute)
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		code = ee.ExitCode()
	default:
		t.Fatalf("tickdb %v: %v\n%s", args, err, errb.String())
	}
	return code, out.String(), errb.String()
}

// startCLIChild starts the CLI on args in a process of its own (this test
// binary re-executed in cliRole, see TestMain) with the given streams; a
// nil stdout or stderr goes to the child's log. The child is killed when
// t ends. Under -race the race runtime's one-second sleep at exit is off
// (its reports are still printed).
func startCLIChild(t *testing.T, args []string, stdin io.Reader, stdout, stderr io.Writer) *child.Child {
	t.Helper()
	return startCLIChildEnv(t, args, nil, stdin, stdout, stderr)
}

// startCLIChildEnv is startCLIChild with more environment.
func startCLIChildEnv(t *testing.T, args, env []string, stdin io.Reader, stdout, stderr io.Writer) *child.Child {
	t.Helper()
	c, err := child.Start(cliRole, &child.Options{Args: args, Stdin: stdin, Stdout: stdout, Stderr: stderr,
		Env: append([]string{"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0")}, env...)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Kill)
	return c
}

// pipe is an OS pipe whose write end a child gets as stdout or stderr;
// the parent's copy of that end closes with closeW once the child runs, so
// that the read end sees EOF when the child exits.
func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}
