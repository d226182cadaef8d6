package lineproto

import (
	"slices"
	"testing"
	"time"
)

// The parser benchmarks. Compare commits with:
//
//	go test ./lineproto -run '^$' -bench 'Parse|AppendLine' -count 10 > new.txt
//	benchstat old.txt new.txt
var lpBenchLines = []struct{ name, line string }{
	{"line=tick", "trades,sym=AAPL,venue=XNAS price=189.25,size=100i,buy=t 1700000000123456789"},
	{"line=escapes", `trades,sym=New\ York,venue=a\,b,note=x\=y,path=back\\slash price=189.25,size\ lots=100i 1700000000123456789`},
	{"line=floats", "quotes,sym=AAPL bid=189.25,ask=189.27,bid_sz=1.5e3,ask_sz=0.000125,mid=-1234.5678,spread=1e-7,vwap=189.2612345,last=189.26 1700000000123456789"},
}

// lpReportRate adds the per-line metrics to a benchmark that parsed one
// line per iteration.
func lpReportRate(b *testing.B) {
	ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(ns, "ns/line")
	b.ReportMetric(1e9/ns, "lines/s")
}

func BenchmarkParse(b *testing.B) {
	for _, c := range lpBenchLines {
		b.Run(c.name, func(b *testing.B) {
			line := []byte(c.line)
			var p Parser
			var l Line
			if ok, err := p.Parse(line, &l); !ok || err != nil {
				b.Fatal(ok, err)
			}
			b.SetBytes(int64(len(line)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := p.Parse(line, &l); err != nil {
					b.Fatal(err)
				}
			}
			lpReportRate(b)
		})
	}
}

// BenchmarkAppendLine writes a parsed Line through Encoder (appendLine).
func BenchmarkAppendLine(b *testing.B) {
	for _, c := range lpBenchLines {
		b.Run(c.name, func(b *testing.B) {
			var p Parser
			var l Line
			if ok, err := p.Parse([]byte(c.line), &l); !ok || err != nil {
				b.Fatal(ok, err)
			}
			dst, err := appendLine(nil, &l)
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(dst)))
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = appendLine(dst[:0], &l)
			}
			lpReportRate(b)
		})
	}
}

// BenchmarkParseLatency times batches of lpLatencyBatch parses (one parse
// is close to the clock's own cost) into a preallocated sample buffer and
// reports the per-line percentiles of the batches.
func BenchmarkParseLatency(b *testing.B) {
	const lpLatencyBatch = 64
	line := []byte(lpBenchLines[0].line)
	var p Parser
	var l Line
	samples := make([]int64, 0, 1<<16)
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		for range lpLatencyBatch {
			if _, err := p.Parse(line, &l); err != nil {
				b.Fatal(err)
			}
		}
		if len(samples) < cap(samples) {
			samples = append(samples, int64(time.Since(start))/lpLatencyBatch)
		}
	}
	slices.Sort(samples)
	at := func(q float64) float64 { return float64(samples[int(q*float64(len(samples)-1))]) }
	b.ReportMetric(at(0.50), "p50-ns")
	b.ReportMetric(at(0.99), "p99-ns")
	b.ReportMetric(at(0.999), "p999-ns")
}
