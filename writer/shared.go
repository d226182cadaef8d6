package writer

import "sync/atomic"

// This file is the package's only user of sync/atomic: the in-process words
// shared by the writer goroutine, the preparer and the flusher. Words shared
// with other processes live in the control file (package index).

// liveSlot is one live segment slot: a tmpfs file mapped read-write.
type liveSlot struct {
	i    int
	path string
	b    []byte // the whole file
	rows []byte // b[BlockSize:]
	// ready is segNo+1 of the segment this slot has been prepared for
	// (header, generation and durable file in place), 0 for none. Written
	// by the preparer (and recovery), read by the writer at a roll and by
	// the flusher.
	ready atomic.Uint64
	// Row-area bytes [popLo, popHi) have been pre-faulted writable
	// (MADV_POPULATE_WRITE); the rest of the slot may be holes. Preparer
	// only (and the open path, before the preparer starts).
	popLo, popHi uint64
	// copied is segNo+1 of the segment the checkpointer is done with in
	// this slot (its hot copies made, tried, or not wanted), 0 for none.
	// Written by the checkpointer (and the open path), read by the
	// preparer, which recycles a slot only after that.
	copied atomic.Uint64
	// dAlloc is how many bytes of the row area of the slot's segment's
	// durable file are allocated (fallocate) ahead of the writer, from the
	// writer's position on: set by the preparer (to 0 when the slot
	// takes a new segment, before ready), read by the flusher, which then
	// needs no allocation of its own for those bytes.
	dAlloc atomic.Uint64
}

// shared holds the counters and hand-off words between the goroutines.
type shared struct {
	curSeg atomic.Uint64 // segment the writer is filling (writer → preparer)
	// pos is a recent position of the writer (its next seq), stored at a
	// roll and when it crosses kickEvery rows since the last store (one
	// store and one non-blocking wake per crossing, never per row). The
	// preparer takes the larger of it and the published count.
	pos atomic.Uint64
	// kickEvery is how many rows the writer goes between those stores:
	// half the distance the preparer keeps populated ahead of it
	// (preparer → writer).
	kickEvery   atomic.Uint64
	rollStalls  atomic.Uint64 // rolls that found the next slot not ready
	stallNanos  atomic.Int64  // time the writer spent waiting at rolls
	flushes     atomic.Uint64
	flushBytes  atomic.Uint64
	syncWant    atomic.Uint64 // highest row count a Sync waits for
	lagAlarms   atomic.Uint64
	lastLagWarn atomic.Int64
	dropTo      atomic.Uint64 // retention: delete the segment files below this one (writer → checkpointer)
	prepSteps   atomic.Uint64 // preparer steps completed (tests wait on it)
	remaps      atomic.Uint64 // index files mapped again, larger (reserve.go)
	repopulate  atomic.Bool   // a remap left the room ahead unfaulted (writer → preparer)
	remapsPut   atomic.Uint64 // remaps left for later: the preparer or checkpointer was busy
	// flushRun is when a Group last began the flush job (unix ns):
	// written by the worker, read by the writer's Publish to space the
	// job's runs FlushInterval apart (group_jobs.go).
	flushRun atomic.Int64
	// flushRetryAt is when the flusher tries again after a failed flush
	// (unix ns; 0: none): written by the flusher, read by a Group's
	// scheduling of its flush job (group_jobs.go: due).
	flushRetryAt atomic.Int64
	// closing is set by Close before it waits for the last rows to be
	// durable: the flusher and the checkpointer stop making hot copies
	// that Close removes anyway (writer → flusher, checkpointer).
	closing atomic.Bool
	// cmpRows and cmpNanos are the rows the background compaction
	// compressed since Open and the time it took them, wall clock from
	// the start of each segment's encoding to its swap (compactor →
	// Stats).
	cmpRows, cmpNanos atomic.Uint64
	// cmpFailing is set while the background compaction's last attempt
	// failed (compactor → writer: a roll does not wait for it then);
	// backlogStalls and backlogNanos count the rolls that waited for it
	// (Options.RawBacklog) and their time.
	cmpFailing    atomic.Bool
	backlogStalls atomic.Uint64
	backlogNanos  atomic.Int64
	// reserved is the seq up to which (exclusive) every row has its room
	// reserved: live slot pages allocated (populated), durable file blocks
	// allocated, time-index entries in the file (preparer → writer; see
	// room.go). The writer appends no row at or past it.
	reserved atomic.Uint64
	// want is the seq the writer needs reserved, when more than the
	// preparer's distance ahead (Reserve; writer → preparer).
	want atomic.Uint64
	// resCond is the preparer's failure to reserve (no space), nil while
	// it reserves; ioCond the flusher's failure to write, nil while it
	// writes; ckCond an index checkpoint's I/O error, which stays for the
	// writer's life (room.go).
	resCond, ioCond, ckCond condition
	waitNanos               atomic.Int64 // time the writer waited for the preparer's reservation
}

// atomicBool is a flag shared between goroutines (group.go's job.busy).
type atomicBool = atomic.Bool

// condition is a transient failure one goroutine found and clears itself.
type condition struct {
	v atomic.Pointer[ConditionError]
}

func (c *condition) set(e *ConditionError) { c.v.Store(e) }

// clear reports whether it was set.
func (c *condition) clear() bool { return c.v.Swap(nil) != nil }

// get returns the failure, or nil (as a *ConditionError: callers that
// return it as an error must check for nil first).
func (c *condition) get() *ConditionError { return c.v.Load() }

// failure is the first background error (flusher or preparer); once set
// the writer refuses further work. onSet, when set before the background
// work starts, is called once with the first error: the flusher's
// waiters wake to see it (in a Group no ticker wakes them).
type failure struct {
	v     atomic.Pointer[error]
	onSet func()
}

func (f *failure) set(err error) {
	if err != nil && f.v.CompareAndSwap(nil, &err) && f.onSet != nil {
		f.onSet()
	}
}

func (f *failure) get() error {
	if p := f.v.Load(); p != nil {
		return *p
	}
	return nil
}
