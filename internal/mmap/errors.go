package mmap

import "errors"

// ErrNoAllocate reports a file system without fallocate (Allocate).
var ErrNoAllocate = errors.New("store: fallocate not supported")
