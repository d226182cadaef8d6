//go:build !linux

package child

import "syscall"

// sysProcAttr is a: there is no death signal outside Linux.
func sysProcAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr { return a }
