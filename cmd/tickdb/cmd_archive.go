//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/reader"
)

type archiveOpts struct {
	to       string
	endpoint string
	tables   []string
	parquet  bool
	uploads  int
}

func newArchiveCmd(g *globals) *cobra.Command {
	o := &archiveOpts{}
	cmd := &cobra.Command{
		Use:   "archive --to s3://BUCKET/PREFIX",
		Short: "Upload the compressed segments the archive does not hold yet (one-shot catch-up)",
		Long: `archive uploads every compressed segment of the database's tables that the
archive's manifest does not list yet, with what a reader needs beside it
(the segment's time index entries and late rows, the symbol dictionary,
the control file), then writes each table's manifest: the same as serve
--archive does continuously. It reads the files O_RDONLY, so it runs
beside a serve that holds the database. A segment the manifest lists is
not uploaded again; an upload cut short is done again whole.

Only compressed segments go up: serve compresses sealed segments by
itself; for a closed table run tickdb compact first (a table's last,
partial segment is compressed when compact runs without --older-than).

Credentials and the server come the standard way: AWS_ACCESS_KEY_ID,
AWS_SECRET_ACCESS_KEY, AWS_REGION, and AWS_ENDPOINT_URL (or --endpoint)
for a server that is not AWS (MinIO, Ceph, versitygw). The bucket must
exist.

Read the archive back with any read-only command and --db s3://BUCKET/PREFIX.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runArchive(cmd, g, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.to, "to", "", "archive location, s3://bucket/prefix (required)")
	f.StringVar(&o.endpoint, "endpoint", "", "S3 endpoint URL, e.g. http://127.0.0.1:7070 (default: AWS_ENDPOINT_URL, else AWS)")
	f.StringSliceVar(&o.tables, "table", nil, "tables to archive (default: all)")
	f.BoolVar(&o.parquet, "parquet", false, "also write each segment's rows as Parquet under PREFIX/parquet/table=T/date=YYYY-MM-DD/")
	f.IntVar(&o.uploads, "uploads", 2, "segments uploaded at once")
	return cmd
}

func runArchive(cmd *cobra.Command, g *globals, o *archiveOpts) error {
	if o.to == "" {
		return errors.New("archive: --to s3://bucket/prefix is required")
	}
	if o.uploads < 1 {
		return fmt.Errorf("archive: --uploads %d: want 1 or more", o.uploads)
	}
	c, err := archive.Dial(o.to, archive.Config{Endpoint: o.endpoint})
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	check, cancel := context.WithTimeout(ctx, 30*time.Second)
	err = c.Check(check)
	cancel()
	if err != nil {
		return err
	}
	tables := o.tables
	if len(tables) == 0 {
		if tables, err = reader.Tables(g.db); err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	var failed error
	for _, t := range tables {
		start := time.Now()
		res, err := archive.Sync(ctx, c, g.db, t, &archive.SyncOptions{Uploads: o.uploads, Parquet: o.parquet})
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "tickdb: archive: %s: %v\n", t, err)
			failed = fmt.Errorf("archive: %d segments of %s not uploaded", res.PendingSegs, t)
			continue
		}
		m := res.Manifest
		fmt.Fprintf(out, "%s: %d segments up (%s in %.1fs); the archive holds rows [%d, %d) in %d segments",
			t, res.Segments, fmtBytes(res.Bytes), time.Since(start).Seconds(), m.FirstSeq, m.EndSeq, len(m.Segments))
		if res.PendingSegs > 0 {
			fmt.Fprintf(out, "; %d pending", res.PendingSegs)
		}
		fmt.Fprintln(out)
	}
	return failed
}
