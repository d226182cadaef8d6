package codec_test

import (
	"testing"

	"github.com/tickdb/tickdb/internal/codec"
)

// Benchmarks over one 64k-row block of realistic ticks (seed 1), per codec
// and for the whole four-column block with zstd. Compare commits with
//
//	go test ./codec -run '^$' -bench . -count 10 > new.txt && benchstat old.txt new.txt
//
// bytes/row is the encoded size (after zstd for the block benchmarks).

// columnBench is one column's encode and decode over the shared block.
type columnBench struct {
	name   string
	encode func(dst []byte) []byte
	decode func(src []byte) error
}

func columnBenches(c ticks, s *codec.State) []columnBench {
	ts, i64 := make([]int64, 0, blockRows), make([]int64, 0, blockRows)
	f64, u32 := make([]float64, 0, blockRows), make([]uint32, 0, blockRows)
	bools, bl := make([]bool, blockRows), make([]bool, 0, blockRows)
	for i := range bools {
		bools[i] = c.size[i] > 300
	}
	return []columnBench{
		{"ts", func(d []byte) []byte { return codec.AppendTs(d, c.ts) },
			func(b []byte) error { _, _, err := codec.DecodeTs(ts[:0], b, blockRows); return err }},
		{"sym", func(d []byte) []byte { return codec.AppendU32(d, c.sym) },
			func(b []byte) error { _, _, err := codec.DecodeU32(u32[:0], b, blockRows); return err }},
		{"price", func(d []byte) []byte { return codec.AppendF64(d, c.price, c.sym, s) },
			func(b []byte) error { _, _, err := codec.DecodeF64(f64[:0], b, blockRows, c.sym, s); return err }},
		{"size", func(d []byte) []byte { return codec.AppendI64(d, c.size, c.sym, s) },
			func(b []byte) error { _, _, err := codec.DecodeI64(i64[:0], b, blockRows, c.sym, s); return err }},
		{"bool", func(d []byte) []byte { return codec.AppendBool(d, bools) },
			func(b []byte) error { _, _, err := codec.DecodeBool(bl[:0], b, blockRows); return err }},
	}
}

func report(b *testing.B, bytes int) {
	rows := float64(blockRows) * float64(b.N)
	b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/rows, "ns/row")
	b.ReportMetric(float64(bytes)/blockRows, "bytes/row")
	b.ReportMetric(0, "ns/op")
}

func BenchmarkEncode(b *testing.B) {
	c := genTicks(blockRows, 1)
	var s codec.State
	dst := make([]byte, 0, 16*blockRows)
	for _, cb := range columnBenches(c, &s) {
		b.Run("codec="+cb.name, func(b *testing.B) {
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = len(cb.encode(dst[:0]))
			}
			report(b, n)
		})
	}
	for _, level := range []codec.Level{codec.LevelFastest, codec.LevelDefault} {
		b.Run("codec=block/level="+itoa(int(level)), func(b *testing.B) {
			raw, z := make([]byte, 0, 16*blockRows), make([]byte, 0, 16*blockRows)
			b.ReportAllocs()
			var n int
			for b.Loop() {
				n = 0
				raw = codec.AppendTs(raw[:0], c.ts)
				n += len(codec.Compress(z[:0], raw, level))
				raw = codec.AppendU32(raw[:0], c.sym)
				n += len(codec.Compress(z[:0], raw, level))
				raw = codec.AppendF64(raw[:0], c.price, c.sym, &s)
				n += len(codec.Compress(z[:0], raw, level))
				raw = codec.AppendI64(raw[:0], c.size, c.sym, &s)
				n += len(codec.Compress(z[:0], raw, level))
			}
			report(b, n)
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	c := genTicks(blockRows, 1)
	var s codec.State
	for _, cb := range columnBenches(c, &s) {
		b.Run("codec="+cb.name, func(b *testing.B) {
			src := cb.encode(nil)
			if err := cb.decode(src); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				_ = cb.decode(src)
			}
			report(b, len(src))
		})
	}
	for _, level := range []codec.Level{codec.LevelFastest, codec.LevelDefault} {
		b.Run("codec=block/level="+itoa(int(level)), func(b *testing.B) {
			e := encodeBlock(c, &s, level)
			n := 0
			for _, z := range e.zst {
				n += len(z)
			}
			buf := make([]byte, 0, 16*blockRows)
			ts, sym := make([]int64, 0, blockRows), make([]uint32, 0, blockRows)
			price, size := make([]float64, 0, blockRows), make([]int64, 0, blockRows)
			var err error
			b.ReportAllocs()
			for b.Loop() {
				buf, _ = codec.Decompress(buf[:0], e.zst[0], cap(buf))
				ts, _, _ = codec.DecodeTs(ts[:0], buf, blockRows)
				buf, _ = codec.Decompress(buf[:0], e.zst[1], cap(buf))
				sym, _, _ = codec.DecodeU32(sym[:0], buf, blockRows)
				buf, _ = codec.Decompress(buf[:0], e.zst[2], cap(buf))
				price, _, _ = codec.DecodeF64(price[:0], buf, blockRows, sym, &s)
				buf, _ = codec.Decompress(buf[:0], e.zst[3], cap(buf))
				size, _, err = codec.DecodeI64(size[:0], buf, blockRows, sym, &s)
			}
			if err != nil || len(ts)+len(price)+len(size) != 3*blockRows {
				b.Fatal(err)
			}
			report(b, n)
		})
	}
}

// BenchmarkCompress and BenchmarkDecompress time zstd alone on each
// encoded column of the block, at the fastest level.
func BenchmarkCompress(b *testing.B) {
	c := genTicks(blockRows, 1)
	var s codec.State
	e := encodeBlock(c, &s, codec.LevelFastest)
	z := make([]byte, 0, 16*blockRows)
	for i, raw := range e.raw {
		b.Run("column="+e.name[i], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				codec.Compress(z[:0], raw, codec.LevelFastest)
			}
			report(b, len(e.zst[i]))
		})
	}
}

func BenchmarkDecompress(b *testing.B) {
	c := genTicks(blockRows, 1)
	var s codec.State
	e := encodeBlock(c, &s, codec.LevelFastest)
	out := make([]byte, 0, 16*blockRows)
	for i, z := range e.zst {
		b.Run("column="+e.name[i], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_, _ = codec.Decompress(out[:0], z, cap(out))
			}
			report(b, len(z))
		})
	}
}
