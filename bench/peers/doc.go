// Package peers holds the benchmark suite's peer systems (internal/harness/suite):
// adapters that store the suite's ticks in other stores, so that tickdb's
// figures can be read next to theirs. It lives in its own module (bench/)
// so that the peers' dependencies never enter tickdb's go.mod.
//
// Every adapter computes a query's Answer by calling Answer.Add(ts, price)
// once for each stored row that matches, so a correct adapter's answer
// equals Data.Expect exactly.
//
// # tstorage
//
// github.com/nakabonne/tstorage v0.3.6, on disk (WithDataPath), without
// its write-ahead log, and with nanosecond timestamps. Each tick is a
// point of metric "price" with one label sym=<symbol name>: tstorage keeps
// one float64 per point, so it stores ts and price only (no size). The
// partition duration is a tenth of the data's time span, so the data falls
// into about ten partitions. Ingest is one InsertRows per batch.
//
// The WAL is off because v0.3.6's loses track of its segments: it removes
// "the oldest" segment by directory order, in which "10" sorts before "2",
// so past ten partitions it deletes live segments and a later Close fails
// with "no segment found" (seen in CI). Without it tstorage does less work
// per point, which only flatters it here; the data still reaches disk at
// Seal.
//
// tstorage flushes a full partition to disk in a goroutine it does not
// wait for, and two such flushes (or one and Close) can write the same
// partition at once. Ingest therefore mirrors tstorage's rule for starting
// a partition and, after each InsertRows, waits until every partition but
// the two newest (kept in memory, writable) has its meta.json on disk,
// which a flush writes last. It costs one Glob per batch and only waits on
// the batches that start a partition.
//
// Seal closes the storage, which writes every partition to disk and
// removes the WAL, fsyncs every file and directory under dir (tstorage
// never fsyncs its partitions), and reopens the storage on the same dir.
// Queries then read only disk partitions. That is also needed for correct
// answers: an in-memory partition keeps a point whose ts equals its
// series' last ts aside and does not return it from Select, and includes
// ts == end when end equals the series' last ts; disk partitions keep
// every point and treat end as exclusive.
//
// Select(metric, labels, start, end) selects start <= ts < end, as the
// suite's [From, To) does, so From and To pass through unchanged
// (MinInt64 and MaxInt64 included: tstorage only compares them); an empty
// range (From >= To), which Select rejects, is answered empty without
// asking. AllSymbols is one Select per symbol. ErrNoDataPoints is an
// empty answer.
//
// OpenExisting (the suite's user protocol, in a fresh process) is
// NewStorage with the same options on the existing directory: it maps
// every partition directory holding a meta.json as a disk partition
// (TestPeers asks every query again of a store opened so). tstorage never
// unmaps a disk partition, not even at Close, so the pages a process
// touched stay in the page cache as long as it lives: the suite's cold
// figures in one process ("window (cold)", "symbol scan (cold)") may find
// pages an earlier query of that process mapped, and the user protocol
// ingests in a child process for that reason.
//
// # pebble
//
// github.com/cockroachdb/pebble v1.1.5 with a 64 MiB block cache, 64 MiB
// memtables and the WAL on. One key per tick, 14 bytes, big-endian so that
// byte order is (sym, ts, seq) order:
//
//	+-----------+----------------------+------------+
//	| sym <2b>  | ts ^ 1<<63 <8b>      | seq <4b>   |
//	+-----------+----------------------+------------+
//
// sym is the symbol index, ts has its sign bit flipped so that negative
// values sort first, and seq counts the symbol's ticks from 0, so ticks of
// one symbol with equal ts get distinct keys. The value is 16 bytes:
// price float64 bits and size, little-endian. Ingest is one Batch per
// batch committed with NoSync; Seal is Flush, which writes the memtable to
// an fsynced sstable. A query is one iterator whose bounds are set per
// symbol to [key(sym, From, 0), key(sym, To, 0)); AllSymbols does that
// for each symbol in turn. OpenExisting opens the directory with
// ReadOnly set (no compactions, no flush after the WAL replay) and a fresh
// block cache.
//
// # bufio
//
// The naive baseline: one file (ticks.bin) written through a 64 KiB
// bufio.Writer, each tick 32 bytes: ts, price float64 bits, size and sym,
// each 8 bytes little-endian. No fsync per batch; Seal is Flush and Sync.
// A query reads the file from the start through a 1 MiB bufio.Reader, with
// no index, keeps the matching rows and stops at the first ts >= To.
// OpenExisting opens the file read-only; its rows are its length over 32.
//
// # Concurrency
//
// A System opened by a Peer is used by one goroutine at a time. The Peer
// values are read-only; do not assign to them.
package peers
