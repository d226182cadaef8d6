//go:build unix

package main

import (
	"errors"
	"syscall"
)

// pidRunning reports whether process pid exists (signal 0; EPERM means it
// exists but belongs to another user).
func pidRunning(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
