package main

import (
	"os"
)

// pidRunning reports whether process pid exists. No writer runs on
// Windows, so a pid in a lock file is another machine's or stale; it
// reports what FindProcess, which opens the process, can tell.
func pidRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
