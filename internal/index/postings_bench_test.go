package index

import (
	"fmt"
	"testing"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
)

// BenchmarkPostWriterPut is the postings' share of an append: Put (and
// Advance when it reports false) of rows over 100 symbols in a fixed
// pseudo-random order, in a version 1 and a version 2 file, the writer
// started again on the same chunks every 2^20 rows (so the file stays
// small and resident). Compare versions in one run:
//
//	go test ./index -run '^$' -bench PostWriterPut -count 10 | benchstat -col /v -
func BenchmarkPostWriterPut(b *testing.B) {
	const nsyms, round = 100, 1 << 20
	order := make([]uint32, round)
	x := uint64(1)
	for i := range order {
		x = x*6364136223846793005 + 1442695040888963407
		u := x >> 33
		order[i] = uint32((u % nsyms) * (u >> 8 % nsyms) / nsyms)
	}
	for _, v := range []uint32{format.PostVersion1, format.PostVersion2} {
		b.Run(fmt.Sprintf("v=%d", v), func(b *testing.B) {
			p := newPostingsB(b, v)
			var pw *PostWriter
			start := func() {
				pw = NewPostWriter(p, 1)
				for range nsyms {
					if _, err := pw.NewSymbol(); err != nil {
						b.Fatal(err)
					}
				}
			}
			start()
			// Grown once: the rounds reuse the same chunks.
			for seq := range uint64(round) {
				if err := pw.Add(order[seq], seq); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			rows := 0
			for b.Loop() {
				start()
				for seq := range uint64(round) {
					if id := order[seq]; !pw.Put(id, seq) {
						if err := pw.Advance(id, seq); err != nil {
							b.Fatal(err)
						}
					}
				}
				rows += round
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(rows), "ns/row")
		})
	}
}

func newPostingsB(b *testing.B, v uint32) *Postings {
	b.Helper()
	path := b.TempDir() + "/" + format.PostName
	if err := createPostings(path, v, testID, vfs.OS); err != nil {
		b.Fatal(err)
	}
	p, err := OpenPostings(path, testID, vfs.OS)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	return p
}
