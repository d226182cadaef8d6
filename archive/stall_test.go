package archive_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/harness/s3test"
)

// TestStalledServer: a server that hangs (SIGSTOP: the connection opens,
// nothing is answered) fails a request once it made no progress for the
// stall timeout, with an error that says so and where, instead of a wait
// for ever; once the server goes on, requests work again.
func TestStalledServer(t *testing.T) {
	s := s3test.Start(t, "")
	s.Bucket(t, "bkt")
	c, err := archive.Dial("s3://bkt/p", archive.Config{Endpoint: s.Endpoint, AccessKey: s3test.AccessKey, SecretKey: s3test.SecretKey,
		Region: s3test.Region, StallTimeout: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.Put(ctx, "x", []byte("before")); err != nil {
		t.Fatal(err)
	}
	if err := s.Pause(); err != nil {
		t.Fatal(err)
	}
	for _, op := range []struct {
		name string
		do   func() error
	}{
		{"put", func() error { return c.Put(ctx, "y", make([]byte, 4<<20)) }},
		{"get", func() error { _, err := c.Get(ctx, "x"); return err }},
		{"stat", func() error { _, err := c.Size(ctx, "x"); return err }},
		{"list", func() error { _, err := c.List(ctx, ""); return err }},
	} {
		err := op.do()
		if !errors.Is(err, archive.ErrStalled) || !strings.Contains(err.Error(), op.name+" s3://bkt/p") || ctx.Err() != nil {
			s.Resume()
			t.Fatalf("%s on a hung server: %v", op.name, err)
		}
	}
	if err := s.Resume(); err != nil {
		t.Fatal(err)
	}
	if b, err := c.Get(ctx, "x"); err != nil || string(b) != "before" {
		t.Fatalf("get after the server went on: %q, %v", b, err)
	}
}
