// Package writer is a table's single, pinned writer: it appends fixed-width
// rows into a live segment in shared memory, publishes them through the
// control file's seqlock, and makes them durable with O_DIRECT in the
// background.
//
// Four goroutines work for one Writer:
//
//   - the caller's goroutine (pinned with Pin: locked to its OS thread,
//     optionally to a CPU and SCHED_FIFO) runs Append, AppendBatch, Publish,
//     Symbol and Sync. Appends copy a row into the mapped live slot, write its
//     check word, a time-index entry every stride and a postings entry; they
//     allocate nothing and do no system call.
//   - the preparer keeps a growing distance ahead of the writer ready (the
//     writer tells it its position once per half distance): it pre-faults
//     the live slot pages there, allocates the durable file's blocks, grows
//     the index files (the room reserved for the next rows), and, once the
//     writer nears its segment's end, makes the next live slot ready: it
//     waits until the slot's previous segment is durable, re-labels it (new
//     generation) and creates the next durable segment file, so a segment
//     roll costs the writer a pointer swap.
//   - the flusher copies newly published rows out of the live slot into an
//     aligned buffer and writes them with one pwrite to the durable segment
//     file (O_DIRECT|O_DSYNC, into blocks the preparer allocated ahead),
//     then publishes the durable count.
//   - the checkpointer makes the index files durable after each sealed
//     segment and then does the background maintenance: it unlinks the
//     segments automatic retention (Options.RetainAge, RetainBytes) moved
//     below the first row, and compresses old segments (Options.CompactAge;
//     internal/cseg).
//
// With Options.Group the last three are not goroutines of the writer but
// jobs of a Group, whose few workers serve every writer in it (a process
// with a thousand tables: ingest.Server makes one); see Group.
//
// Retain and Compact do the same on demand, from the writer's goroutine;
// CloseCompacted also compresses the segments a running writer must keep
// raw, once closing has sealed them.
//
// # Concurrency
//
// One Writer per table across all processes: Open takes an flock on the
// table's LOCK file and fails at once with a *LockedError naming the
// holder's pid. The methods that append must be called from one goroutine at
// a time, and so must Stats; other goroutines and processes watch a table
// through a reader (Len, Durable, OutOfOrder).
//
// # Durability
//
// Publish makes rows visible, not durable. Sync returns when every row
// appended before it is durable. With FlushInterval (default) rows become
// durable within about FlushInterval of being published. If the process is
// killed, published rows survive in shared memory and the next Open
// continues from them; if the machine restarts, rows up to the last durable
// count survive and a torn tail is cut (docs/FORMAT.md §9). A write the
// flusher cannot make (EIO) does not stop the writer: it is retried from
// the live slot, which holds every row until it is durable; meanwhile Sync
// and Reserve return an error matching ErrIO and Condition says io_error.
//
// # Caveats
//
// Shared memory and disk follow the rows (live slots and segment files are
// sparse, populated and allocated a growing distance ahead of the writer
// and the flusher). Shared memory is bounded: LiveSlots × segment file size
// per table. The room for the next rows (live slot pages, durable file
// blocks, index entries) is reserved ahead of them: on a full file system
// appends past it fail with ErrNoSpace, storing nothing, until there is
// room again (Reserve, Condition; room.go), never with SIGBUS.
// When appends outrun the disk for longer than LiveSlots-1 segments, the
// writer waits at the segment roll (counted in Stats); set MaxLag with
// LagAlarm or LagBlock to act earlier.
package writer
