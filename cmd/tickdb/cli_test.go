package main

// Running the CLI from tests: in this process, or as a separate process
// (this test binary re-executed as tickdb, see TestMain).

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/child"
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
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = cliEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
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

// cliEnv is the environment of a CLI child process: this test binary's,
// marked to run as the CLI, and under -race without the race runtime's
// one-second sleep at exit (its reports are still printed).
func cliEnv() []string {
	return append(os.Environ(), child.Env+"="+cliRole, "GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
}
