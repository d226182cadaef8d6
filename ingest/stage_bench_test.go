package ingest

import (
	"sync"
	"testing"

	"github.com/tickdb/tickdb/internal/loadgen"
	"github.com/tickdb/tickdb/internal/testutil"
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
