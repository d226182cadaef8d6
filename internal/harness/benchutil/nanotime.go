package benchutil

import (
	_ "unsafe" // for go:linkname
)

// Nanotime is the runtime's monotonic clock in nanoseconds: one vDSO read
// (time.Now makes two, wall and monotonic). Latency benchmarks time small
// batches with it. This file is the package's only user of unsafe.
//
//go:linkname Nanotime runtime.nanotime
func Nanotime() int64
