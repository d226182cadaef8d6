package child

import "syscall"

// sysProcAttr is a copy of a (or a new one) that has the child killed when
// the thread that started it exits (see Start).
func sysProcAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	var b syscall.SysProcAttr
	if a != nil {
		b = *a
	}
	b.Pdeathsig = syscall.SIGKILL
	return &b
}
