// Package s3test runs a real S3-compatible server for the tests:
// versitygw (github.com/versity/versitygw) with its POSIX backend over a
// temporary directory, listening on 127.0.0.1. Buckets are directories
// under Server.Root and objects are files below them, so a test can read
// what went up through S3 straight from the disk (DuckDB reads the
// archive's Parquet that way).
//
// Install it with
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// (.ci/run does). Without it the tests skip, or fail when CI is set.
package s3test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/tickdb/tickdb/internal/harness/testutil"
)

// The root account's keys (any non-empty pair works).
const (
	AccessKey = "tickdbtest"
	SecretKey = "tickdbtestsecret"
	Region    = "us-east-1"
)

// Server is a running versitygw.
type Server struct {
	Root     string // the POSIX backend's directory: bucket = subdirectory
	Addr     string // 127.0.0.1:port
	Endpoint string // http://127.0.0.1:port
	bin      string
	mu       sync.Mutex
	cmd      *exec.Cmd
	done     chan struct{}
	logPath  string
}

// Binary is the versitygw executable: $VERSITYGW, versitygw on PATH, or
// $(go env GOPATH)/bin/versitygw; "" when none is there.
func Binary() string {
	if p := os.Getenv("VERSITYGW"); p != "" {
		return p
	}
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = string(trimSpace(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, "go", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[len(b)-1] == '\n' || b[len(b)-1] == ' ') {
		b = b[:len(b)-1]
	}
	return b
}

// Start starts versitygw over a new temporary directory (or root, when
// not empty) on a free 127.0.0.1 port and waits until it answers. The
// server is stopped and its directory removed when t ends. Without the
// binary, t is skipped (failed with CI set).
func Start(t testing.TB, root string) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		testutil.Need(t, "versitygw not installed: go install github.com/versity/versitygw/cmd/versitygw@v1.8.0")
	}
	if root == "" {
		root = t.TempDir()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := &Server{Root: root, Addr: addr, Endpoint: "http://" + addr, bin: bin,
		logPath: filepath.Join(t.TempDir(), "versitygw.log")}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Restart starts the server again after Stop (on the same port and
// directory) and waits until it answers.
func (s *Server) Restart() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return fmt.Errorf("s3test: server already running")
	}
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.bin, "--port", s.Addr, "posix", "--nometa", s.Root)
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+AccessKey, "ROOT_SECRET_KEY="+SecretKey, "VGW_REGION="+Region)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("s3test: start versitygw: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); logf.Close(); close(done) }()
	s.cmd, s.done = cmd, done
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-done:
			log, _ := os.ReadFile(s.logPath)
			s.cmd = nil
			return fmt.Errorf("s3test: versitygw exited at start: %s", log)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("s3test: versitygw not answering on %s after 20 s", s.Addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the server (SIGKILL: a server that goes away) and waits for
// it to exit. Restart starts it again.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return
	}
	s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Pause stops the server's process (SIGSTOP): a server that hangs, its
// connections open and unanswered, rather than one that is gone. Resume
// lets it go on.
func (s *Server) Pause() error { return s.signal(syscall.SIGSTOP) }

// Resume lets a paused server go on (SIGCONT).
func (s *Server) Resume() error { return s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return fmt.Errorf("s3test: server not running")
	}
	return s.cmd.Process.Signal(sig)
}

// Env is the environment an archive client (a serve, a CLI command)
// needs to reach the server with the root keys.
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
		"AWS_ENDPOINT_URL=" + s.Endpoint,
	}
}

// SetEnv sets Env in this process for the rest of t.
func (s *Server) SetEnv(t testing.TB) {
	t.Setenv("AWS_ACCESS_KEY_ID", AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", SecretKey)
	t.Setenv("AWS_REGION", Region)
	t.Setenv("AWS_ENDPOINT_URL", s.Endpoint)
}

// Client is a minio client of the server with the root keys.
func (s *Server) Client(t testing.TB) *minio.Client {
	t.Helper()
	c, err := minio.New(s.Addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: Region})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Bucket makes a bucket and returns its name.
func (s *Server) Bucket(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := s.Client(t).MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("make bucket %s: %v", name, err)
	}
	return name
}

// Port is the server's port.
func (s *Server) Port() int {
	_, p, _ := net.SplitHostPort(s.Addr)
	n, _ := strconv.Atoi(p)
	return n
}
