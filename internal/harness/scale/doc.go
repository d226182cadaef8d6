//go:build linux

// Package scale is the scale benchmark of `tickdb bench scale`: a table
// of many symbols (an options universe: a million contracts) written
// through a real `tickdb serve` process over its line-protocol TCP
// listener, beside the same rows over 100 symbols. For each workload it
// measures the bytes on disk per row, the ingest rate until the rows are
// visible, serve's resident memory, its stop and its restart (to the
// first write accepted and visible after it), and the latest row of one
// symbol and of every symbol (GET /latest, and the library over an open
// reader).
//
// A workload is a table, a number of symbols and rows, and a mix: every
// symbol named once, then the rest of the rows uniform or Zipf-like over
// the symbols. Other scale workloads (many tables) sit beside it as
// further Workload kinds and rows of the same report.
//
// # Concurrency
//
// Run runs its workloads one at a time; nothing here is shared.
package scale
