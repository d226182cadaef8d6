package limits

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// Run the limits alone (they also run inside the writer and reader
// benchmarks, next to the figure they bound):
//
//	go test -run '^$' -bench . -count 5 ./internal/harness/limits | tee limits.txt
//	benchstat limits.txt

// TestSanity checks every measurement on tiny inputs: it must compute the
// right answer and finish in milliseconds (go test ./... stays fast).
func TestSanity(t *testing.T) {
	r, err := NewRegion("", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	b := r.Bytes()
	rows := len(b) / RowSize
	if res := StoreRows(b, 0, rows); res.Ops != int64(rows) || res.Elapsed <= 0 {
		t.Fatalf("StoreRows: %+v", res)
	}
	// StoreRows stamps row i's first word with i; the sum of a column and a
	// binary search over it then have known answers.
	want := uint64(rows) * uint64(rows-1) / 2
	if res := SeqSum([][]byte{b}, RowSize, 0); res.Sum != want || res.Ops != int64(rows) {
		t.Fatalf("SeqSum = %d over %d rows, want %d over %d", res.Sum, res.Ops, want, rows)
	}
	// Two areas of 2^k rows, addressed by seq as the reader does.
	shift := uint(10)
	areas := [][]byte{b[:RowSize<<shift], b[RowSize<<shift : 2*RowSize<<shift]}
	seqs := []uint64{0, 5, 1023, 1024, 2047}
	var wantR uint64
	for _, s := range seqs {
		for w := 0; w < 4; w++ {
			wantR += binary.LittleEndian.Uint64(b[int(s)*RowSize+8*w:])
		}
	}
	if res := RandRead(areas, shift, RowSize, seqs); res.Sum != wantR {
		t.Fatalf("RandRead sum %d, want %d", res.Sum, wantR)
	}
	targets := []int64{-1, 0, 7, 1500, 2047, 5000}
	var wantB uint64
	for _, tg := range targets {
		wantB += uint64(min(max(tg, 0), 2048))
	}
	if res := Bsearch(areas, shift, RowSize, 2048, targets); res.Sum != wantB {
		t.Fatalf("Bsearch sum %d, want %d", res.Sum, wantB)
	}
	dir := t.TempDir()
	res, err := ODirect(dir, 2<<20, 1<<20)
	if err != nil {
		t.Skipf("no O_DIRECT here: %v", err)
	}
	if res.Ops != 2 || res.Bytes != 2<<20 {
		t.Fatalf("ODirect: %+v", res)
	}
	lat, err := DSyncWrites(dir, 3, 2, nil)
	if err != nil || len(lat) != 3 {
		t.Fatalf("DSyncWrites: %v %v", lat, err)
	}
}

// BenchmarkRawStore is the store limit: 32-byte rows into a resident
// 256 MiB tmpfs mapping (four 64 MiB live slots, the writer's default
// footprint).
func BenchmarkRawStore(b *testing.B) {
	r, err := NewRegion("", 256<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	const rows = 1 << 20
	b.ReportAllocs()
	from := 0
	for b.Loop() {
		StoreRows(r.Bytes(), from, rows)
		from += rows
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N*rows)
	b.ReportMetric(ns, "ns/row")
	b.ReportMetric(1e9/ns, "rows/s")
}

// BenchmarkRawSeqRead is the scan limit: sum one column of a resident
// 256 MiB mapping.
func BenchmarkRawSeqRead(b *testing.B) {
	r, err := NewRegion("", 256<<20)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	StoreRows(r.Bytes(), 0, len(r.Bytes())/RowSize)
	areas := [][]byte{r.Bytes()}
	b.ReportAllocs()
	var rows int64
	for b.Loop() {
		rows += SeqSum(areas, RowSize, 16).Ops
	}
	ns := float64(b.Elapsed().Nanoseconds()) / float64(rows)
	b.ReportMetric(ns, "ns/row")
	b.ReportMetric(1e9/ns, "rows/s")
}

// BenchmarkRawRandRead is the Get limit: independent 32-byte reads at
// random rows of a resident 640 MiB mapping (20M rows).
func BenchmarkRawRandRead(b *testing.B) {
	const shift = 21
	r, err := NewRegion("", 10*RowSize<<shift)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Close()
	var areas [][]byte
	for i := 0; i < 10; i++ {
		areas = append(areas, r.Bytes()[i*RowSize<<shift:(i+1)*RowSize<<shift])
	}
	rng := rand.New(rand.NewPCG(1, 2))
	seqs := make([]uint64, 1<<16)
	for i := range seqs {
		seqs[i] = rng.Uint64N(10 << shift)
	}
	b.ReportAllocs()
	for b.Loop() {
		RandRead(areas, shift, RowSize, seqs)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(seqs)), "ns/read")
}

// BenchmarkRawODirect is the flusher limit: 1 MiB O_DIRECT|O_DSYNC pwrites
// into a fallocated 256 MiB file in the temp dir (the tables' file system).
func BenchmarkRawODirect(b *testing.B) {
	dir := b.TempDir()
	var bytes int64
	var el time.Duration
	for b.Loop() {
		res, err := ODirect(dir, 256<<20, 1<<20)
		if err != nil {
			b.Skip(err)
		}
		bytes += res.Bytes
		el += res.Elapsed
	}
	b.ReportMetric(float64(bytes)/el.Seconds()/1e6, "MB/s")
}

// BenchmarkRawDSync is the Sync floor: 4 KiB O_DIRECT|O_DSYNC pwrite
// latency, rewriting each block perblock times.
func BenchmarkRawDSync(b *testing.B) {
	for _, per := range []int{1, 128} {
		b.Run("perblock="+itoa(per), func(b *testing.B) {
			dir := b.TempDir()
			var lat []time.Duration
			for b.Loop() {
				var err error
				if lat, err = DSyncWrites(dir, 256, per, lat[:0]); err != nil {
					b.Skip(err)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds()), "p50-ns")
			b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for ; n > 0; n /= 10 {
		i--
		b[i] = byte('0' + n%10)
	}
	return string(b[i:])
}
