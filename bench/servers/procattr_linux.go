package servers

import "syscall"

// procAttr makes a server process get SIGTERM if the benchmark dies, so
// that a benchmark killed midway leaves no server running (tickdb then
// closes its tables and removes its shared memory as on any SIGTERM).
func procAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM} }
