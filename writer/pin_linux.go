package writer

import (
	"errors"
	"fmt"
	"runtime"

	"golang.org/x/sys/unix"
)

// Pin locks the calling goroutine to its OS thread and, as configured,
// binds that thread to Options.CPU and raises it to SCHED_FIFO. Call it on
// the goroutine that will append, before the first Append; call Unpin on the
// same goroutine when done. A SCHED_FIFO request that the system refuses
// (no CAP_SYS_NICE or rlimit) is logged as a warning, not returned.
func (w *Writer) Pin() error {
	runtime.LockOSThread()
	if w.opts.PinCPU {
		var set unix.CPUSet
		set.Set(w.opts.CPU)
		if err := unix.SchedSetaffinity(0, &set); err != nil {
			runtime.UnlockOSThread()
			return fmt.Errorf("writer: pin to cpu %d: %w", w.opts.CPU, err)
		}
	}
	if w.opts.FIFO {
		attr := &unix.SchedAttr{Size: unix.SizeofSchedAttr, Policy: unix.SCHED_FIFO, Priority: 1}
		if err := unix.SchedSetAttr(0, attr, 0); err != nil {
			if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL) {
				w.log.Warn("writer: SCHED_FIFO not permitted, running SCHED_OTHER", "err", err)
			} else {
				return fmt.Errorf("writer: SCHED_FIFO: %w", err)
			}
		}
	}
	return nil
}

// Unpin undoes Pin's thread lock (affinity and policy stay with the thread,
// which the Go runtime then retires or reuses).
func (w *Writer) Unpin() { runtime.UnlockOSThread() }
