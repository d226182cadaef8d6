package writer

import (
	"container/heap"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
)

// Group runs the background work of many writers on a fixed set of
// goroutines: a few flush workers, a preparer and a checkpointer, however
// many tables it holds. A writer opened with Options.Group set starts no
// goroutine of its own; its flusher, preparer and checkpointer become
// jobs that the group's workers run when there is something to do:
//
//   - a table with published rows not yet durable (the writer's Publish
//     queues it, one atomic load when it is queued already), a Sync or
//     WaitDurable waiting, or a sealed segment to finish is queued for a
//     flush worker; with FlushInterval it is run at most once per
//     FlushInterval (the first rows after a quiet spell at once), so rows
//     are durable within about FlushInterval of their publish, as with a
//     writer's own flusher. A table is never polled by a ticker of its
//     own: a thousand idle tables cost the group nothing.
//   - a preparer step runs when the writer reports its position (every
//     half distance and at each roll), and again 10 ms later while a
//     slot it needs is not free yet.
//   - a checkpoint runs when the flusher seals a segment.
//
// A job is queued at most once, and runs on one worker at a time; the
// workers take jobs first in, first out, and a flush job writes at most
// one buffer (GroupOptions.FlushBytes) before it goes to the back of the
// queue, so one table's backlog or slow disk holds up the others by at
// most the workers it occupies. Every flush worker has its own
// page-aligned buffer, shared by the tables it serves (a writer of the
// group maps none). The flush workers and the checkpointer are locked to
// their OS threads (their system calls block for milliseconds), so the
// group holds Flushers+Checkpointers threads whatever the number of
// tables; the preparers and the clock (the delayed runs) are plain
// goroutines.
//
// # Concurrency
//
// A Group may be used by any number of writers from any goroutines.
// Each writer's Close stops its own jobs (a running one finishes first),
// drains its rows and leaves the group running. Close the group after
// every writer in it: Close refuses, changing nothing, while a writer is
// still open.
type Group struct {
	opts  GroupOptions
	mu    sync.Mutex
	cond  *sync.Cond // job state changes that Close and stop wait for
	pools [jobKinds]*pool
	// timers holds the jobs scheduled for later (due time order); clock
	// is the goroutine that moves them to their pool when due, clockAt
	// when it wakes next (zero: not waiting on a time), clockc wakes it
	// for an earlier one.
	timers  timerHeap
	clockAt time.Time
	clockc  chan struct{}
	members int    // writers open in the group
	runs    uint64 // jobs run
	closed  bool
	wg      sync.WaitGroup
}

// GroupOptions configures NewGroup; zero fields take the defaults.
type GroupOptions struct {
	// Flushers is the number of flush workers (default
	// DefaultFlushers): how many tables' O_DIRECT writes may be in
	// flight at once.
	Flushers int
	// Preparers (default 1) and Checkpointers (default 1) run the
	// preparer steps and the checkpoints (and the retention, compaction
	// and hot copies that follow them) of every table.
	Preparers     int
	Checkpointers int
	// FlushBytes is the size of each flush worker's buffer, the most one
	// O_DIRECT write carries (default 8 MiB, rounded up to a block). The
	// writers' own Options.FlushBytes does not apply in a group.
	FlushBytes int
}

// DefaultFlushers is GroupOptions.Flushers' default. A table's flush is
// one O_DSYNC write, which waits on the device (a few hundred µs here)
// rather than a core, and writes to different files proceed in parallel:
// a thousand tables written in turn need as many writes a second, which
// two workers took here at about 2,500 a second with 16 waiting writes
// at once (p50 4 ms), eight at 5,000 to 6,700 (p50 under 2 ms).
const DefaultFlushers = 8

// jobKind names a writer's kinds of background work; each has its pool.
type jobKind int

const (
	flushJob jobKind = iota
	prepJob
	ckJob
	jobKinds
)

// pool is one kind's ready queue and workers.
type pool struct {
	kind  jobKind
	ready []*job // FIFO: ready[head:]
	head  int
	cond  *sync.Cond // on Group.mu: a job was queued, or the group closes
	lock  bool       // workers locked to their OS threads
}

// NewGroup starts a group's workers.
func NewGroup(o *GroupOptions) (*Group, error) {
	if err := checkPlatform(); err != nil {
		return nil, err
	}
	var r GroupOptions
	if o != nil {
		r = *o
	}
	if r.Flushers <= 0 {
		r.Flushers = DefaultFlushers
	}
	if r.Preparers <= 0 {
		r.Preparers = 1
	}
	if r.Checkpointers <= 0 {
		r.Checkpointers = 1
	}
	if r.FlushBytes <= 0 {
		r.FlushBytes = 8 << 20
	}
	r.FlushBytes = (r.FlushBytes + format.BlockSize - 1) &^ (format.BlockSize - 1)
	g := &Group{opts: r, clockc: make(chan struct{}, 1)}
	g.cond = sync.NewCond(&g.mu)
	counts := [jobKinds]int{flushJob: r.Flushers, prepJob: r.Preparers, ckJob: r.Checkpointers}
	// Flush workers own their buffers: mapped before any worker starts,
	// so a failure leaves nothing running.
	bufs := make([][]byte, r.Flushers)
	for i := range bufs {
		b, err := mmap.MapAnon(r.FlushBytes)
		if err != nil {
			for _, b := range bufs[:i] {
				mmap.Unmap(b)
			}
			return nil, fmt.Errorf("writer: group flush buffer: %w", err)
		}
		bufs[i] = b
	}
	for k := range jobKinds {
		p := &pool{kind: k, cond: sync.NewCond(&g.mu), lock: k == ckJob}
		g.pools[k] = p
		for i := range counts[k] {
			var buf []byte
			if k == flushJob {
				buf = bufs[i]
			}
			g.wg.Add(1)
			go g.work(p, buf)
		}
	}
	g.wg.Add(1)
	go g.clock()
	return g, nil
}

// ErrGroupBusy is returned by Group.Close while writers of the group are
// open.
var ErrGroupBusy = errors.New("writer: group still has open writers")

// Close stops the group's workers and unmaps their buffers. Every writer
// of the group must be closed first: with one still open, Close returns
// an error matching ErrGroupBusy and the group goes on running.
func (g *Group) Close() error {
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		return nil
	}
	if g.members > 0 {
		n := g.members
		g.mu.Unlock()
		return fmt.Errorf("%w: %d", ErrGroupBusy, n)
	}
	g.closed = true
	for _, p := range g.pools {
		p.cond.Broadcast()
	}
	g.mu.Unlock()
	select {
	case g.clockc <- struct{}{}:
	default:
	}
	g.wg.Wait()
	return nil
}

// GroupStats are a group's counters.
type GroupStats struct {
	Writers int    // writers open in the group
	Runs    uint64 // jobs run, of every kind
}

// Stats returns the group's counters.
func (g *Group) Stats() GroupStats {
	g.mu.Lock()
	defer g.mu.Unlock()
	return GroupStats{Writers: g.members, Runs: g.runs}
}

// join counts a writer in; it fails once the group is closed.
func (g *Group) join() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return errors.New("writer: group is closed")
	}
	g.members++
	return nil
}

// leaveIfSet counts a writer out of g (its jobs are stopped), if g is
// not nil.
func (g *Group) leaveIfSet() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.members--
	g.mu.Unlock()
}

// work is one worker of pool p: it runs the jobs queued there, one at a
// time, until the group closes. buf is its flush buffer (flush workers).
func (g *Group) work(p *pool, buf []byte) {
	defer g.wg.Done()
	if buf != nil {
		defer mmap.Unmap(buf)
	}
	if p.lock {
		// Its system calls (O_DSYNC writes, msyncs) block for
		// milliseconds: keep them off threads the writers run on, as
		// a writer's own flusher and checkpointer do.
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for {
		for p.head == len(p.ready) && !g.closed {
			p.cond.Wait()
		}
		if p.head == len(p.ready) {
			return // closed, and nothing queued (no writer is open)
		}
		j := p.ready[p.head]
		p.ready[p.head] = nil
		p.head++
		if p.head == len(p.ready) {
			p.ready, p.head = p.ready[:0], 0
		}
		if j.state != jobQueued {
			continue // stopped, paused or run since it was queued
		}
		j.state, j.onWorker = jobRunning, true
		g.runs++
		g.mu.Unlock()
		next := j.run(buf)
		g.mu.Lock()
		j.onWorker = false
		g.settle(j, next)
	}
}

// settle moves job j on after a run that asked to run again after next
// (< 0: not unless kicked). g.mu held.
func (g *Group) settle(j *job, next time.Duration) {
	if a := j.after; a > 0 {
		j.after = 0
		if next < 0 || a < next {
			next = a
		}
	}
	switch j.state {
	case jobPaused, jobStopped:
		// Held while it ran: hold waits for this.
		if next >= 0 {
			j.kicked = true
		}
		g.cond.Broadcast()
		return
	case jobRerun:
		next = 0
	}
	if next < 0 {
		j.state = jobIdle
		j.busy.Store(false)
		if j.pending == nil {
			return
		}
		// A kick that came after the run looked for work, while busy
		// still read true, was dropped (the writer's Publish loads busy
		// without the lock): look again now that it reads false.
		if next = j.pending(); next < 0 {
			return
		}
		j.busy.Store(true)
	}
	if next > 0 {
		g.schedule(j, time.Now().Add(next))
		return
	}
	j.state = jobQueued
	g.push(j)
}

// push queues j (state jobQueued) at the back of its pool. g.mu held.
func (g *Group) push(j *job) {
	p := g.pools[j.kind]
	p.ready = append(p.ready, j)
	p.cond.Signal()
}

// schedule queues j to run at due. g.mu held.
func (g *Group) schedule(j *job, due time.Time) {
	j.state = jobScheduled
	j.gen++
	heap.Push(&g.timers, timer{due: due, j: j, gen: j.gen})
	if g.clockAt.IsZero() || due.Before(g.clockAt) {
		g.clockAt = due
		select {
		case g.clockc <- struct{}{}:
		default:
		}
	}
}

// clock moves scheduled jobs to their pools when they are due.
func (g *Group) clock() {
	defer g.wg.Done()
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	for {
		g.mu.Lock()
		if g.closed {
			g.mu.Unlock()
			return
		}
		now := time.Now()
		for len(g.timers) > 0 && !g.timers[0].due.After(now) {
			e := heap.Pop(&g.timers).(timer)
			if e.j.state == jobScheduled && e.j.gen == e.gen {
				e.j.state = jobQueued
				g.push(e.j)
			}
		}
		var wait time.Duration
		if len(g.timers) > 0 {
			g.clockAt = g.timers[0].due
			wait = g.clockAt.Sub(now)
		} else {
			g.clockAt = time.Time{}
			wait = time.Hour
		}
		g.mu.Unlock()
		t.Reset(wait)
		select {
		case <-t.C:
		case <-g.clockc:
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
		}
	}
}

// jobState is where a job is. A job is in at most one queue (its pool's
// ready queue or the timers) at a time; an entry of a job that was
// stopped, paused or run since is skipped when it comes up.
type jobState int

const (
	jobIdle      jobState = iota
	jobQueued             // in its pool's ready queue
	jobScheduled          // in the timers, to be queued at its due time
	jobRunning            // on a worker
	jobRerun              // running, and kicked since: queued again when the run ends
	jobPaused             // not run until resumed (kicks are remembered)
	jobStopped            // not run again
)

// job is one writer's background work of one kind, as a group runs it.
type job struct {
	g    *Group
	kind jobKind
	// run does the work with the worker's buffer (flush jobs) and says
	// when to run again: < 0 not unless kicked, 0 at once (at the back of
	// the queue), > 0 after that long.
	run func(buf []byte) time.Duration
	// pending, when set, says whether the job has work all the same once
	// a run left it idle, as run's result does; it runs under Group.mu,
	// so it only loads atomic words.
	pending func() time.Duration
	// busy is false only while the job is idle: the writer's Publish
	// kicks only then. Stored under Group.mu, loaded without it.
	busy atomicBool
	// Under Group.mu: where the job is, whether a worker is running it,
	// whether it was kicked while held, the generation of its timers
	// entry.
	state    jobState
	onWorker bool
	kicked   bool
	gen      uint64
	// after is the soonest delay a kick asked for while the job ran (0:
	// none): settle schedules the next run no later than that.
	after time.Duration
}

func (g *Group) newJob(kind jobKind, run func([]byte) time.Duration, pending func() time.Duration) *job {
	return &job{g: g, kind: kind, run: run, pending: pending}
}

// kick asks for a run: after delay (> 0) or at once. A job queued or
// running already is left as it is, but for a kick at once, which brings
// a scheduled job forward and has a running one without a pending check
// run again. The caller stores what the run is to see before it kicks.
func (j *job) kick(delay time.Duration) {
	g := j.g
	g.mu.Lock()
	defer g.mu.Unlock()
	switch j.state {
	case jobIdle:
		j.busy.Store(true)
		if delay > 0 {
			g.schedule(j, time.Now().Add(delay))
			return
		}
		j.state = jobQueued
		g.push(j)
	case jobScheduled:
		if delay <= 0 {
			j.state = jobQueued // its timers entry is stale now
			g.push(j)
		}
	case jobRunning:
		// A job with a pending check (the flusher) looks for work again
		// as its run ends (settle), after this kick's state: running it
		// again would be a run for nothing.
		if delay <= 0 && j.pending == nil {
			j.state = jobRerun
		}
		if delay > 0 && (j.after == 0 || delay < j.after) {
			j.after = delay // a run later, asked for by this run itself, say
		}
	case jobPaused:
		j.kicked = true
	}
}

// stop ends the job: a running one finishes its run first, a queued or
// scheduled one does not run. It returns once no run is in progress.
func (j *job) stop() { j.hold(jobStopped, false) }

// pause holds the job as stop does, until resume. With try it holds it
// only if it is not running, and reports whether it did.
func (j *job) pause(try bool) bool { return j.hold(jobPaused, try) }

// hold moves the job to state to (paused or stopped), waiting for a run
// in progress; with try it does nothing while one runs and reports false.
func (j *job) hold(to jobState, try bool) bool {
	g := j.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if try && j.onWorker {
		return false
	}
	switch j.state {
	case jobStopped:
		return true
	case jobRunning, jobRerun:
		if j.state == jobRerun {
			j.kicked = true
		}
		j.state = to
		g.wait(j)
	case jobQueued, jobScheduled:
		j.kicked = true // it had work
		j.state = to
	default:
		j.state = to
	}
	j.busy.Store(true)
	return true
}

// wait waits until the run in progress of j, held (paused or stopped)
// while it ran, has ended. g.mu held.
func (g *Group) wait(j *job) {
	for j.onWorker {
		g.cond.Wait()
	}
}

// resume lets a paused job run again: at once when it was kicked (or had
// work) meanwhile, else when next kicked.
func (j *job) resume() {
	g := j.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if j.state != jobPaused {
		return
	}
	if j.kicked {
		j.kicked = false
		j.state = jobQueued
		g.push(j)
		return
	}
	j.state = jobIdle
	j.busy.Store(false)
}

// timer is a scheduled run of a job; gen tells a stale entry.
type timer struct {
	due time.Time
	j   *job
	gen uint64
}

type timerHeap []timer

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(a, b int) bool { return h[a].due.Before(h[b].due) }
func (h timerHeap) Swap(a, b int)      { h[a], h[b] = h[b], h[a] }
func (h *timerHeap) Push(x any)        { *h = append(*h, x.(timer)) }
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = timer{}
	*h = old[:len(old)-1]
	return e
}
