// Command tail is a runnable example of a reader in its own process: it
// follows a table that examples/writer (or any tickdb writer) appends to,
// taking no lock and opening every file read-only.
//
//	go run ./examples/tail -db /tmp/ticks -n 100000
//
// It waits for the table to exist, then prints rows as they are published
// (rows published after it started, or all with -from-start; every row when
// it had to wait for the table), and exits after -n rows with a summary whose
// checksum examples/writer prints for the same rows:
//
//	tail: 100000 rows seq [0, 100000) checksum 5230a8c57bf48daa in 40ms
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

func main() {
	db := flag.String("db", "tickdata", "database directory")
	table := flag.String("table", "trades", "table name")
	n := flag.Uint64("n", math.MaxUint64, "exit after this many rows")
	fromStart := flag.Bool("from-start", false, "print every row, not only new ones")
	quiet := flag.Bool("q", false, "print only the summary")
	timeout := flag.Duration("timeout", 0, "give up after this long (0: never)")
	flag.Parse()

	ctx := context.Background()
	if *timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *timeout)
		defer cancel()
	}
	if err := run(ctx, *db, *table, *n, *fromStart, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "tail:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, db, table string, n uint64, fromStart, quiet bool) error {
	r, waited, err := openWhenReady(ctx, db, table)
	if err != nil {
		return err
	}
	defer r.Close()

	from := r.Len() // new rows only, like tail -f
	if fromStart || waited {
		from = r.FirstSeq()
	}
	// Backoff spins, then yields, then sleeps up to MaxSleep: low latency
	// while rows flow, almost no CPU while the table is idle.
	t := r.Tail(from, &reader.Backoff{MaxSleep: time.Millisecond})
	s := r.Schema()
	sum := fnv.New64a() // over each row's bytes, check word excluded
	var line []byte
	start, got := time.Now(), uint64(0)
	for got < n {
		row, seq, err := t.Wait(ctx)
		if err != nil {
			return fmt.Errorf("after %d rows: %w", got, err)
		}
		if seq != from+got {
			return fmt.Errorf("row seq %d, want %d", seq, from+got)
		}
		sum.Write(row[:len(row)-store.CheckSize])
		got++
		if !quiet {
			line = appendRow(line[:0], r, s, seq, row)
			os.Stdout.Write(line)
		}
	}
	fmt.Printf("tail: %d rows seq [%d, %d) checksum %016x in %v\n",
		got, from, from+got, sum.Sum64(), time.Since(start).Round(time.Millisecond))
	return nil
}

// openWhenReady opens the table, polling until it exists; waited says it
// did not exist at first (so every row in it is new to us).
func openWhenReady(ctx context.Context, db, table string) (r *reader.Reader, waited bool, err error) {
	for {
		r, err := reader.Open(db, table, nil)
		if !errors.Is(err, store.ErrNoTable) {
			return r, waited, err
		}
		if !waited {
			fmt.Fprintf(os.Stderr, "tail: waiting for table %s in %s\n", table, db)
			waited = true
		}
		select {
		case <-ctx.Done():
			return nil, waited, fmt.Errorf("waiting for table %s: %w", table, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// appendRow formats one row as "seq ts col=value ...", a line.
func appendRow(b []byte, r *reader.Reader, s *store.Schema, seq uint64, row store.Row) []byte {
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, ' ')
	b = time.Unix(0, row.Ts()).UTC().AppendFormat(b, time.RFC3339Nano)
	for i, c := range s.Cols[1:] {
		col := s.ColAt(i + 1)
		b = append(b, ' ')
		b = append(b, c.Name...)
		b = append(b, '=')
		switch c.Type {
		case store.TypeSym:
			name, err := r.SymbolName(row.Sym(col))
			if err != nil {
				name = "?" + strconv.Itoa(int(row.Sym(col)))
			}
			b = strconv.AppendQuote(b, name)
		case store.TypeF64:
			b = strconv.AppendFloat(b, row.F64(col), 'g', -1, 64)
		case store.TypeI64:
			b = strconv.AppendInt(b, row.I64(col), 10)
		case store.TypeBool:
			b = strconv.AppendBool(b, row.Bool(col))
		}
	}
	return append(b, '\n')
}
