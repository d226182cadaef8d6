package ingest

import (
	"bytes"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/tickdb/tickdb/internal/harness/benchutil"
	"github.com/tickdb/tickdb/internal/harness/loadgen"
	"github.com/tickdb/tickdb/internal/harness/scale"
	"github.com/tickdb/tickdb/internal/harness/testutil"
	"github.com/tickdb/tickdb/lineproto"
)

// The two halves of the ingestion path, each on one core, without sockets:
//
//	go test -run '^$' -bench 'Stage' ./ingest
//
// BenchmarkStageLoop is an event loop's work per line: split, parse and
// encode a record into a batch.
func BenchmarkStageLoop(b *testing.B) {
	data, err := loadgen.Ticks("ticks", 100_000, 500, 1, true)
	if err != nil {
		b.Fatal(err)
	}
	o := (&Options{}).withDefaults()
	lp := &loop{srv: &Server{opts: o, m: newMetrics()}, m: newMetrics(), ring: newRing(2, 1<<20)}
	c := &conn{}
	b.SetBytes(int64(len(data) / 100_000))
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		lp.cur = lp.ring.claim()
		for i := 0; i < len(data); {
			j := i + 64<<10
			for j < len(data) && data[j-1] != '\n' {
				j++
			}
			j = min(j, len(data))
			lp.lines(c, data[i:j], false)
			lp.cur.reset()
			i = j
		}
		n += 100_000
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/line")
}

// BenchmarkStageHTTP is a write request's work per line on the goroutine
// staging it: split, parse and stage (http_chunks.go), a chunk of 1 MiB
// of ticks at a time, with and without timestamps.
func BenchmarkStageHTTP(b *testing.B) {
	for _, ts := range []bool{false, true} {
		b.Run(fmt.Sprintf("ts=%v", ts), func(b *testing.B) {
			data, err := loadgen.Ticks("ticks", 30_000, 500, 1, ts)
			if err != nil {
				b.Fatal(err)
			}
			data = data[:bytes.LastIndexByte(data[:min(len(data), chunkText)], '\n')+1]
			lines := bytes.Count(data, []byte("\n"))
			h := &httpAPI{s: &Server{opts: (&Options{}).withDefaults()}}
			bs := newBodyStager(h, 1, nil, 0)
			b.SetBytes(int64(len(data)))
			b.ReportAllocs()
			n := 0
			for b.Loop() {
				c := bs.newChunk(nil, data)
				c.st.firstBlock = len(data) // as a chunk handed to a worker
				bs.stageChunk(c)
				if c.fail != nil || c.st.rows != uint64(lines) {
					b.Fatalf("%d rows staged of %d: %+v", c.st.rows, lines, c.fail)
				}
				c.st.free()
				bs.chunks = bs.chunks[:0]
				n += lines
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/line")
		})
	}
}

// BenchmarkStageSink is the writer goroutine's work per line: decode a
// record, resolve its columns, intern its symbol, append; publish per batch.
func BenchmarkStageSink(b *testing.B) {
	db, live := testutil.DB(b)
	o := (&Options{DB: db, LiveRoot: live}).withDefaults()
	var wg sync.WaitGroup
	s := newSink(o, newMetrics(), nil, &wg)
	data, err := loadgen.Ticks("ticks", 1<<20, 500, 1, false)
	if err != nil {
		b.Fatal(err)
	}
	var p lineproto.Parser
	var l lineproto.Line
	var batches []*batch
	bt := &batch{}
	for i := 0; i < len(data); {
		j := i
		for data[j] != '\n' {
			j++
		}
		if _, err := p.Parse(data[i:j], &l); err != nil {
			b.Fatal(err)
		}
		bt.buf = appendRecord(bt.buf, &l, 1, 1)
		bt.recs++
		if bt.recs == 1024 {
			batches = append(batches, bt)
			bt = &batch{}
		}
		i = j + 1
	}
	b.SetBytes(int64(len(data) >> 20))
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		s.applyBatch(batches[k%len(batches)])
		s.publish()
		k++
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(k*1024), "ns/line")
	s.closeTables()
}

// BenchmarkStageSinkSymbols is BenchmarkStageSink over a table of many
// symbols (names shaped like option contracts, internal/harness/scale): the
// table is made with every symbol named once (timed apart: new-ns/line
// and new-cpu-ns/line), then each
// iteration applies and publishes a batch of 1,024 rows drawn uniformly
// or Zipf-like over the symbols, through segment rolls and checkpoints
// like serve's writer goroutine. TICKDB_BENCH_SYMBOLS sets the symbols
// (default 1M):
//
//	go test -run '^$' -bench 'StageSinkSymbols' -benchtime 4000x -count 3 ./ingest
func BenchmarkStageSinkSymbols(b *testing.B) {
	nsym := 1_000_000
	if v := os.Getenv("TICKDB_BENCH_SYMBOLS"); v != "" {
		n, err := scale.ParseCount(v)
		if err != nil {
			b.Fatal(err)
		}
		nsym = n
	}
	for _, mix := range []scale.Mix{scale.Uniform, scale.Zipf} {
		b.Run(fmt.Sprintf("symbols=%d/mix=%s", nsym, mix), func(b *testing.B) {
			benchSinkSymbols(b, scale.Workload{Table: "opt", Symbols: nsym, Rows: nsym + 4<<20, Mix: mix, Seed: 1})
		})
	}
}

func benchSinkSymbols(b *testing.B, w scale.Workload) {
	db, live := testutil.DB(b)
	o := (&Options{DB: db, LiveRoot: live}).withDefaults()
	var wg sync.WaitGroup
	s := newSink(o, newMetrics(), nil, &wg)
	defer s.closeTables()
	plan := w.Plan()
	batches := func(plan []uint32) []*batch {
		data, err := w.Lines(plan)
		if err != nil {
			b.Fatal(err)
		}
		var p lineproto.Parser
		var l lineproto.Line
		var out []*batch
		bt := &batch{}
		for i := 0; i < len(data); {
			j := bytes.IndexByte(data[i:], '\n') + i
			if _, err := p.Parse(data[i:j], &l); err != nil {
				b.Fatal(err)
			}
			bt.buf = appendRecord(bt.buf, &l, 1, 1)
			if bt.recs++; bt.recs == 1024 {
				out = append(out, bt)
				bt = &batch{}
			}
			i = j + 1
		}
		if bt.recs > 0 {
			out = append(out, bt)
		}
		return out
	}
	fresh := batches(plan[:w.Symbols])
	t0 := time.Now()
	cpu0 := benchutil.StartCPU()
	for _, bt := range fresh {
		s.applyBatch(bt)
		s.publish()
	}
	newCPU := float64(cpu0.Stop().Nanoseconds()) / float64(w.Symbols)
	newNs := float64(time.Since(t0).Nanoseconds()) / float64(w.Symbols)
	fresh = nil
	known := batches(plan[w.Symbols:])
	plan = nil
	b.ReportAllocs()
	k := 0
	cpu := benchutil.StartCPU()
	f0 := benchutil.ThreadFaults()
	for b.Loop() {
		s.applyBatch(known[k%len(known)])
		s.publish()
		k++
	}
	faults := benchutil.ThreadFaults() - f0
	b.ReportMetric(float64(cpu.Stop().Nanoseconds())/float64(k*1024), "cpu-ns/line")
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(k*1024), "ns/line")
	b.ReportMetric(float64(faults)/float64(k*1024), "faults/line")
	b.ReportMetric(newNs, "new-ns/line")
	b.ReportMetric(newCPU, "new-cpu-ns/line")
}
