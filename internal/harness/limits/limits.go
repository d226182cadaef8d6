// Package limits measures the raw limits of the machine that tickdb's
// storage core is compared against, in the same process and run as the
// benchmarks: the rate of plain 32-byte stores into a resident MAP_SHARED
// tmpfs mapping (what an append costs without tickdb), the O_DIRECT|O_DSYNC
// sequential write bandwidth and 4 KiB write latency of the table's file
// system (what the flusher can at best achieve), and sequential, random and
// binary-search reads of resident mappings (what a query can at best
// achieve). A benchmark reports its figure next to the matching limit, so a
// ratio means the same thing on a noisy shared machine as on a quiet one.
//
// # Concurrency
//
// Every function measures on the calling goroutine and shares nothing; a
// Region is owned by its creator.
//
// # Caveats
//
// Linux only (O_DIRECT, fallocate, MADV_POPULATE_WRITE). The loops are
// written to be honest rather than clever: plain loads and stores the
// compiler cannot drop (each returns a checksum), no SIMD, one goroutine.
package limits

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// RowSize is the row width the limits are measured with: the tick schema's
// 32 bytes (ts, price, size, sym, check).
const RowSize = 32

var le = binary.LittleEndian

// Result is one timed measurement.
type Result struct {
	Ops     int64         // rows stored, rows read, reads, searches, or writes
	Bytes   int64         // bytes moved (0 where it means nothing)
	Elapsed time.Duration // wall time of the timed loop only
	CPU     time.Duration // CPU time of the measuring thread in the loop
	Sum     uint64        // checksum of what was read, so the loop is not dropped
}

// CPUNsPerOp is the mean thread CPU time per operation: unlike NsPerOp it
// leaves out the time the thread was descheduled, which on a shared
// machine can be most of the wall time.
func (r Result) CPUNsPerOp() float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.CPU.Nanoseconds()) / float64(r.Ops)
}

// ThreadCPU is the CPU time consumed so far by the calling OS thread
// (CLOCK_THREAD_CPUTIME_ID). Lock the goroutine to its thread
// (runtime.LockOSThread) around the two readings of an interval.
func ThreadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// clock times one measurement loop in wall and thread CPU time.
type clock struct {
	wall time.Time
	cpu  time.Duration
}

func startClock() clock {
	runtime.LockOSThread()
	return clock{wall: time.Now(), cpu: ThreadCPU()}
}

func (c clock) stop() (wall, cpu time.Duration) {
	cpu = ThreadCPU() - c.cpu
	wall = time.Since(c.wall)
	runtime.UnlockOSThread()
	return wall, cpu
}

// NsPerOp is the mean time per operation.
func (r Result) NsPerOp() float64 {
	if r.Ops == 0 {
		return 0
	}
	return float64(r.Elapsed.Nanoseconds()) / float64(r.Ops)
}

// OpsPerSec is operations per second.
func (r Result) OpsPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Ops) / r.Elapsed.Seconds()
}

// BytesPerSec is bytes per second.
func (r Result) BytesPerSec() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Bytes) / r.Elapsed.Seconds()
}

// ShmDir is /dev/shm where it is a directory (tmpfs on Linux), else the
// temp dir: where live slots go by default.
func ShmDir() string {
	if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
		return "/dev/shm"
	}
	return os.TempDir()
}

// Region is a resident MAP_SHARED mapping of a file in a tmpfs directory,
// like a recycled live slot. Its file is unlinked as soon as it is mapped,
// so the memory goes back to the system on Close or when the process dies.
type Region struct {
	b []byte
}

// NewRegion maps size bytes (rounded up to 4 KiB) of a new file in dir
// ("" means ShmDir()) read-write and shared, and pre-faults it writable.
func NewRegion(dir string, size int) (*Region, error) {
	if dir == "" {
		dir = ShmDir()
	}
	size = (size + 4095) &^ 4095
	f, err := os.CreateTemp(dir, "tickdb-limits-*")
	if err != nil {
		return nil, fmt.Errorf("limits: region: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := unix.Fallocate(int(f.Fd()), 0, 0, int64(size)); err != nil {
		return nil, fmt.Errorf("limits: fallocate %s: %w", f.Name(), err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("limits: mmap %s: %w", f.Name(), err)
	}
	if err := unix.Madvise(b, unix.MADV_POPULATE_WRITE); err != nil {
		// Before Linux 5.14: fault it in by hand.
		for i := 0; i < len(b); i += 4096 {
			b[i] = 0
		}
	}
	return &Region{b: b}, nil
}

// Bytes is the mapped memory. It is invalid after Close.
func (r *Region) Bytes() []byte { return r.b }

// Close unmaps the region.
func (r *Region) Close() error {
	if r.b == nil {
		return nil
	}
	err := unix.Munmap(r.b)
	r.b = nil
	return err
}

// StoreRows stores rows 32-byte rows into dst one after another, starting
// at row from and wrapping at the end of dst, each copied as four 8-byte
// words from a small source ring with its first word (the ts) stamped: an
// append with nothing but the stores. This is the raw store rate an append
// is compared with. Give dst the footprint the writer cycles through
// (LiveSlots × segment size): this machine's L3 is large enough that a
// smaller region would be measured in cache.
func StoreRows(dst []byte, from, rows int) Result {
	var src [64][4]uint64
	for i := range src {
		src[i] = [4]uint64{uint64(i) * 1000, 0x4059000000000000 + uint64(i), 100 * uint64(i%7+1), uint64(i % 100)}
	}
	per := len(dst) / RowSize
	if per == 0 {
		return Result{}
	}
	c := startClock()
	j := from % per
	for i := 0; i < rows; i++ {
		s := &src[i&63]
		d := dst[j*RowSize : j*RowSize+RowSize]
		le.PutUint64(d[0:], uint64(i))
		le.PutUint64(d[8:], s[1])
		le.PutUint64(d[16:], s[2])
		le.PutUint64(d[24:], s[3])
		if j++; j == per {
			j = 0
		}
	}
	el, cpu := c.stop()
	return Result{Ops: int64(rows), Bytes: int64(rows) * RowSize, Elapsed: el, CPU: cpu, Sum: le.Uint64(dst[(per-1)*RowSize:])}
}

// SeqSum reads every row of each area in order and sums the 8-byte word at
// byte off of each row: a full scan with nothing but the loads. Each area
// holds whole rows (len a multiple of rowSize).
func SeqSum(areas [][]byte, rowSize, off int) Result {
	c := startClock()
	var sum uint64
	var rows int64
	for _, a := range areas {
		n := len(a) / rowSize
		for i := 0; i < n; i++ {
			sum += le.Uint64(a[i*rowSize+off:])
		}
		rows += int64(n)
	}
	el, cpu := c.stop()
	return Result{Ops: rows, Bytes: rows * int64(rowSize), Elapsed: el, CPU: cpu, Sum: sum}
}

// RandRead reads the 32-byte row seqs[i] for every i, where row s lives in
// areas[s>>shift] at (s & (1<<shift - 1)) * rowSize, and sums its four
// words. The reads are independent (no address depends on a previous
// load), like a loop of Gets on precomputed sequence numbers.
func RandRead(areas [][]byte, shift uint, rowSize int, seqs []uint64) Result {
	mask := uint64(1)<<shift - 1
	c := startClock()
	var sum uint64
	for _, s := range seqs {
		a := areas[s>>shift]
		o := int(s&mask) * rowSize
		r := a[o : o+32]
		sum += le.Uint64(r[0:]) + le.Uint64(r[8:]) + le.Uint64(r[16:]) + le.Uint64(r[24:])
	}
	el, cpu := c.stop()
	return Result{Ops: int64(len(seqs)), Bytes: int64(len(seqs)) * 32, Elapsed: el, CPU: cpu, Sum: sum}
}

// Bsearch finds, for every target, the first of rows [0, n) whose leading
// int64 (the ts) is >= target, by a plain binary search over the rows
// (addressed as in RandRead). Sum is the sum of the answers. It is the
// index-free way to seek; a time index should beat it.
func Bsearch(areas [][]byte, shift uint, rowSize int, n uint64, targets []int64) Result {
	mask := uint64(1)<<shift - 1
	c := startClock()
	var sum uint64
	for _, t := range targets {
		lo, hi := uint64(0), n
		for lo < hi {
			m := lo + (hi-lo)/2
			a := areas[m>>shift]
			if int64(le.Uint64(a[int(m&mask)*rowSize:])) < t {
				lo = m + 1
			} else {
				hi = m
			}
		}
		sum += lo
	}
	el, cpu := c.stop()
	return Result{Ops: int64(len(targets)), Elapsed: el, CPU: cpu, Sum: sum}
}

// directFile creates a file of size bytes in dir, fallocated, and opens it
// O_WRONLY|O_DIRECT|O_DSYNC, as the flusher opens a durable segment. The
// file is unlinked at once; closing the returned file frees it.
func directFile(dir string, size int64) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".tickdb-limits-*")
	if err != nil {
		return nil, fmt.Errorf("limits: %w", err)
	}
	name := f.Name()
	defer os.Remove(name)
	err = unix.Fallocate(int(f.Fd()), 0, 0, size)
	if err == nil {
		err = f.Sync()
	}
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("limits: fallocate %s: %w", name, err)
	}
	d, err := os.OpenFile(name, os.O_WRONLY|unix.O_DIRECT|unix.O_DSYNC, 0)
	if err != nil {
		if errors.Is(err, unix.EINVAL) {
			return nil, fmt.Errorf("limits: %s does not support O_DIRECT: %w", dir, err)
		}
		return nil, fmt.Errorf("limits: %w", err)
	}
	return d, nil
}

// alignedBuf is size bytes of anonymous memory (page-aligned, as O_DIRECT
// needs), filled with a non-zero pattern; free it with unix.Munmap.
func alignedBuf(size int) ([]byte, error) {
	b, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANON)
	if err != nil {
		return nil, fmt.Errorf("limits: mmap buffer: %w", err)
	}
	for i := 0; i < len(b); i += 8 {
		le.PutUint64(b[i:], uint64(i)*0x9E3779B97F4A7C15)
	}
	return b, nil
}

// ODirect writes size bytes sequentially in chunk-byte pwrites (chunk a
// multiple of 4 KiB) to a new fallocated file in dir opened
// O_DIRECT|O_DSYNC, from a page-aligned anonymous buffer: one write in
// flight at a time, as the flusher does. The file is removed afterwards.
// BytesPerSec is the raw durable write bandwidth of dir's file system.
func ODirect(dir string, size int64, chunk int) (Result, error) {
	if chunk <= 0 || chunk%4096 != 0 {
		return Result{}, fmt.Errorf("limits: chunk %d is not a positive multiple of 4096", chunk)
	}
	size = (size + int64(chunk) - 1) / int64(chunk) * int64(chunk)
	f, err := directFile(dir, size)
	if err != nil {
		return Result{}, err
	}
	defer f.Close()
	buf, err := alignedBuf(chunk)
	if err != nil {
		return Result{}, err
	}
	defer unix.Munmap(buf)
	var writes int64
	start := time.Now()
	for off := int64(0); off < size; off += int64(chunk) {
		if _, err := f.WriteAt(buf, off); err != nil {
			return Result{}, fmt.Errorf("limits: pwrite at %d: %w", off, err)
		}
		writes++
	}
	el := time.Since(start)
	return Result{Ops: writes, Bytes: size, Elapsed: el}, nil
}

// DSyncWrites times n 4 KiB pwrites with O_DIRECT|O_DSYNC into a new
// fallocated file in dir, moving on to the next block every perBlock
// writes (a Sync of a few rows rewrites the partial tail block; a larger
// one starts a new block). It appends each write's latency to lat and
// returns it. This is the floor under Writer.Sync.
func DSyncWrites(dir string, n, perBlock int, lat []time.Duration) ([]time.Duration, error) {
	if perBlock < 1 {
		perBlock = 1
	}
	blocks := int64(n/perBlock + 1)
	f, err := directFile(dir, blocks*4096)
	if err != nil {
		return lat, err
	}
	defer f.Close()
	buf, err := alignedBuf(4096)
	if err != nil {
		return lat, err
	}
	defer unix.Munmap(buf)
	for i := 0; i < n; i++ {
		off := int64(i/perBlock) * 4096
		le.PutUint64(buf, uint64(i))
		t := time.Now()
		if _, err := f.WriteAt(buf, off); err != nil {
			return lat, fmt.Errorf("limits: pwrite at %d: %w", off, err)
		}
		lat = append(lat, time.Since(t))
	}
	return lat, nil
}

// MapFile maps the file at path read-only and shared (length 0: the whole
// file). Unmap it with Unmap.
func MapFile(path string, length int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if length == 0 {
		st, err := f.Stat()
		if err != nil {
			return nil, err
		}
		length = int(st.Size())
	}
	b, err := unix.Mmap(int(f.Fd()), 0, length, unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("limits: mmap %s: %w", path, err)
	}
	return b, nil
}

// Unmap releases a mapping made by MapFile. nil is a no-op.
func Unmap(b []byte) error {
	if b == nil {
		return nil
	}
	return unix.Munmap(b)
}

// PopulateRead pre-faults b readable (MADV_POPULATE_READ; a no-op error on
// kernels before 5.14), so a "resident" limit does not time page faults.
func PopulateRead(b []byte) error { return unix.Madvise(b, unix.MADV_POPULATE_READ) }
