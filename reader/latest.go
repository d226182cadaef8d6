package reader

import (
	"errors"
	"fmt"
	"math"

	"github.com/tickdb/tickdb/internal/cseg"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
	"github.com/tickdb/tickdb/store"
)

// Latest rows: the last row of a symbol at or before a time, like kdb+'s
// `select last by sym from t where ts<=at` or QuestDB's LATEST ON. Each
// symbol's answer is found through its own index, never a scan of the
// table: the time index gives the seq bound of the rows at or before the
// time (once for every symbol), then per symbol a binary search of its
// postings gives its last row below that bound, read from whatever tier
// holds it (live slot, hot slot, raw file); a row in a compressed
// segment clustered by symbol (cseg version 2) is taken from that
// segment's directory and the symbol's one data block, and below the
// postings floor (their chunks punched out), where the postings no longer
// name the rows, the compressed segments' directories are searched
// instead, newest first.

// Latest is a position for latest-row queries at one time over one
// snapshot of the table: every Sym answer is as of the same published
// rows. It holds no resource: reuse one across queries. A Latest is used
// by the goroutine that owns its Reader.
type Latest struct {
	r      *Reader
	at     int64
	b      uint64 // rows [first, b) have ts <= at (see latestBound)
	zseg   uint64 // 1 + a clustered compressed segment (from b on) holding the rest of them, or 0
	first  uint64
	vis    uint64
	nextCk uint64
	nlate  uint64 // the snapshot's late rows (lateSym answers when > 0)
}

// latestState is a Reader's buffers and cache for Latest.Sym (the field
// Reader.last). Everything in it grows once and is reused.
type latestState struct {
	chain index.Chain // one symbol's postings chain
	zrows []byte      // a compressed data block's rows (cseg.Segment.SymBlock)
	zseqs []uint64    // and their seqs
	// By symbol id: the last row of the data block of a clustered
	// compressed segment that answered last, with its seq: a query whose
	// answer is the same block's last row (any time from the block's last
	// ts to the next block's first, "now" included) takes it from here
	// instead of decoding the block again.
	hits []zhit
	hrow []byte // hits' rows, hrs bytes each (the dst size they were copied for)
	hrs  int
	it   Iter // lateSym's windows
}

// zhit is one symbol's cached block-last row (latestState.hits).
type zhit struct {
	z   *cseg.Segment // nil: none (a pointer held keeps it from being reused)
	n   uint64        // its segment
	k   int           // its data block
	seq uint64
}

// Latest positions l at time at: it takes a snapshot of the published
// rows and the seq bound of those with ts <= at (one binary search of the
// time index and one stride of rows, none when at is at or after the
// last row's ts). at = math.MaxInt64 asks for every symbol's newest row.
func (r *Reader) Latest(at int64, l *Latest) error {
	if r.closed {
		return ErrClosed
	}
	if r.symOff < 0 {
		return fmt.Errorf("reader: table has no sym column")
	}
	snap, err := r.snapshot()
	if err != nil {
		return err
	}
	r.visible = snap.Visible
	*l = Latest{r: r, at: at, first: snap.FirstSeq, vis: snap.Visible, nextCk: snap.NextChunk, nlate: snap.Late}
	if snap.Late > 0 {
		return r.lateFor(snap.Late) // lateSym needs no bound
	}
	return r.latestBound(l, snap)
}

// latestBound sets l.b, and l.zseg: the rows with ts <= l.at are the
// published rows before seq l.b, and, when l.zseg is set, those of
// clustered compressed segment l.zseg-1 (from l.b on) whose ts is at
// most l.at. The boundary is found in the time index; a seek through the
// rows makes it exact, except in a clustered compressed segment, where
// each row a seek probes would cost a block decoded: there the bound is
// the segment's start, and its directory, indexed by ts, does the rest.
//
// This is the one place where latest-row queries assume that ts never
// decreases in seq order, so that the rows with ts <= at are exactly the
// rows before a seq bound and "the last row by ts, ties to the larger
// seq" is "the last row by seq before the bound". Everything after it
// (Latest.Sym) takes, per symbol, its last row below the bound (or, in
// segment l.zseg-1, its last row with ts <= at: the same row under this
// assumption). A table with late rows (stored out of ts order) is
// answered by lateSym instead.
func (r *Reader) latestBound(l *Latest, snap index.Snap) error {
	at := l.at
	if snap.Visible <= snap.FirstSeq || at >= snap.LastTs || at == math.MaxInt64 {
		l.b = snap.Visible
		return nil
	}
	// The first row with ts > at is in [a, b], one stride of the time
	// index, which never crosses a segment's end: b is at most the first
	// row of the segment after a's.
	a, b, err := r.coarse(at+1, snap.FirstSeq, snap.Visible)
	if err != nil {
		return err
	}
	if n := a >> r.shift; a < b && n < r.ctl.CmpSegs() {
		v, err := r.view(n)
		if err != nil {
			return err
		}
		if v.kind == viewCompressed && v.z.Version() == cseg.VersionClustered {
			// Every row of the segments after n has ts > at.
			l.b, l.zseg = max(snap.FirstSeq, n<<r.shift), n+1
			return nil
		}
	}
	l.b, err = r.seek(at+1, snap.FirstSeq, snap.Visible, 0)
	return err
}

// LastSym copies into dst (RowSize bytes) the last row of symbol id with
// ts <= at among the published rows (among equal ts, the one with the
// larger sequence number) and returns its sequence number; ok is false
// when the symbol has no such row. It is Latest and Latest.Sym in one
// call: for many symbols at one time, use those (one snapshot and one
// seek for all).
func (r *Reader) LastSym(id uint32, at int64, dst []byte) (seq uint64, ok bool, err error) {
	var l Latest
	if err := r.Latest(at, &l); err != nil {
		return 0, false, err
	}
	return l.Sym(id, dst)
}

// Sym copies into dst (RowSize bytes) the last row of symbol id with
// ts <= the time l was positioned at, among the rows of l's snapshot
// (among equal ts, the one with the larger sequence number), and returns
// its sequence number; ok is false when the symbol has no such row (none
// at all, all later, or all deleted by retention).
//
// Its cost is O(log n) in the symbol's rows plus one row read: a walk of
// the chain of the symbol's postings directories (a word per 511 data
// chunks: 261,632 rows of it, 685,251 in a version 2 or 3 file), a binary
// search of its postings and a checked copy of the
// row (ReadRow: safe against a live slot recycled meanwhile). A row in a
// clustered compressed segment costs the decoding of the symbol's data
// block there (4,096 rows at most), unless the answer is that block's
// last row and the previous query of the symbol found it too (then a
// copy). A symbol with no postings entry below the bound but punched ones
// (its rows there compacted below the postings floor) is looked for in
// each compressed segment's directory from the floor down, one binary
// search per segment. It allocates nothing once the reader's buffers have
// grown and the segments it reads are mapped.
//
// dst is checked: its check word matches its seq, its symbol is id and
// its ts is at most the time; a row that fails is reported as damage.
func (l *Latest) Sym(id uint32, dst []byte) (seq uint64, ok bool, err error) {
	r := l.r
	if r == nil {
		return 0, false, errors.New("reader: Latest not positioned (Reader.Latest)")
	}
	if r.closed {
		return 0, false, ErrClosed
	}
	if r.schema.Layout(len(dst)) < 0 {
		return 0, false, fmt.Errorf("reader: row buffer of %d bytes for rows of %d", len(dst), r.rowSize)
	}
	if int(id) >= r.syms.Len() {
		if err := r.refreshSymbols(); err != nil {
			return 0, false, err
		}
		if int(id) >= r.syms.Len() {
			return 0, false, fmt.Errorf("%w: id %d", ErrUnknownSymbol, id)
		}
	}
	if l.nlate > 0 {
		return l.lateSym(id, dst)
	}
	if l.zseg != 0 {
		// The boundary's compressed segment first: its directory.
		n := l.zseg - 1
		v, err := r.view(n)
		if err != nil {
			return 0, false, l.gone(err)
		}
		if v.kind != viewCompressed {
			return 0, false, fmt.Errorf("reader: segment %d is no longer compressed", n) // (never: a compressed view stays)
		}
		if seq, ok, err := l.fromDir(v, n, id, dst); err != nil || ok {
			return seq, ok, err
		}
	}
	if l.b <= l.first {
		return 0, false, nil
	}
	dir := r.syms.Dir(id)
	if dir >= l.nextCk {
		if l.nextCk == 0 && l.b <= r.ctl.PostFloor() {
			// No postings at all, every row below the postings floor:
			// a table kept without them (an archive's read-only copy,
			// package archive), read through the segments' directories.
			return l.belowFloor(id, dst)
		}
		// Added after the snapshot (the dictionary is published before
		// the chunk count that covers its postings): no row in it.
		return 0, false, nil
	}
	// The symbol's postings as positions (index.Postings.Locate): every
	// block but the last is full (a block closed early repeats its last
	// entry, which the search below takes as any other: the position
	// found names the same row).
	post, ch := r.post, &r.last.chain
	if err := post.LoadChain(ch, dir, l.nextCk); err != nil {
		return 0, false, err
	}
	nb := ch.Len()
	if nb == 0 {
		return 0, false, nil
	}
	// A directory word out of range is damage: the chain notes it and
	// the check after the search reports it.
	if post.Entry(ch.Block(nb-1), 0) == 0 && ch.Err() == nil {
		// The snapshot's last block reads punched: the writer had
		// begun another for the symbol when the compaction's postings
		// went, so every row of the symbol in the snapshot is below
		// the postings floor (counting its entries would answer from
		// an earlier block a punch left, one not 4 KiB whole).
		return l.belowFloor(id, dst)
	}
	npos := post.BlockStart(nb-1) + uint64(chunkFill(post, ch.Block(nb-1), nb-1, l.vis))
	word := func(p uint64) uint64 {
		j, k := post.Locate(p)
		return post.Entry(ch.Block(j), k)
	}
	// The first position whose entry is at or past the bound; a punched
	// entry (0, its chunk dropped below the postings floor) counts as
	// before every row, as in RangeSym.
	lo, hi := uint64(0), npos
	if hi > 0 && word(hi-1)-1 < l.b { // (a punched 0 wraps to MaxUint64)
		lo = hi // the newest entry is below the bound: the common case
	}
	for lo < hi {
		m := lo + (hi-lo)/2
		if e := word(m); e == 0 || e-1 < l.b {
			lo = m + 1
		} else {
			hi = m
		}
	}
	var e uint64
	if lo > 0 {
		e = word(lo - 1)
	}
	if err := ch.Err(); err != nil {
		return 0, false, err
	}
	if lo == 0 {
		return 0, false, nil
	}
	p := lo - 1
	if e == 0 {
		// Its rows below the bound end below the postings floor: in the
		// clustered compressed segments' directories.
		return l.belowFloor(id, dst)
	}
	seq = e - 1
	if seq < l.first {
		return 0, false, nil // deleted by retention
	}
	j, k := post.Locate(p)
	off := post.EntryOff(ch.Block(j), k)
	// A segment compressed since the snapshot may hold rows past it,
	// which its directory would name: the row is read by seq instead.
	if n := seq >> r.shift; n < r.ctl.CmpSegs() && (n+1)<<r.shift <= l.vis {
		v, err := r.view(n)
		if err != nil {
			return 0, false, l.gone(err)
		}
		if v.kind == viewCompressed && v.z.Version() == cseg.VersionClustered {
			got, ok, err := l.fromDir(v, n, id, dst)
			if err != nil {
				return 0, false, err
			}
			if !ok || got != seq {
				return 0, false, format.Corruptf(r.post.Path(), off, "postings of symbol %d: the last row at or before %d is row %d, the directory of %s says %v (row %d)",
					id, l.at, seq, v.path, ok, got)
			}
			return seq, true, nil
		}
	}
	if err := r.ReadRow(seq, dst); err != nil {
		return 0, false, l.gone(err)
	}
	if !format.Valid(seq, dst) {
		return 0, false, format.Corruptf(r.post.Path(), off, "postings of symbol %d name row %d, which fails its check word", id, seq)
	}
	if got := le.Uint32(dst[r.symOff:]); got != id {
		return 0, false, format.Corruptf(r.post.Path(), off, "postings of symbol %d name row %d, which has symbol %d", id, seq, got)
	}
	if ts := store.Row(dst).Ts(); ts > l.at {
		return 0, false, format.Corruptf(r.post.Path(), off, "postings of symbol %d: row %d below the bound of ts %d has ts %d", id, seq, l.at, ts)
	}
	return seq, true, nil
}

// gone maps a row deleted by retention since the snapshot to "no row"
// (the symbol's older rows went first), and passes other errors on.
func (l *Latest) gone(err error) error {
	if errors.Is(err, ErrTruncated) {
		return nil
	}
	return err
}

// belowFloor finds symbol id's last row below the bound among the rows
// whose postings were punched (below the postings floor, all in clustered
// compressed segments or deleted): each segment's directory, from the
// floor (or the bound) down.
func (l *Latest) belowFloor(id uint32, dst []byte) (uint64, bool, error) {
	r := l.r
	top := min(l.b, r.ctl.PostFloor())
	if top <= l.first {
		return 0, false, nil
	}
	for n := (top - 1) >> r.shift; n<<r.shift+r.mask >= l.first; n-- {
		v, err := r.view(n)
		if err != nil {
			return 0, false, l.gone(err)
		}
		if v.kind == viewDurable && n<<r.shift < r.ctl.PostFloor() {
			// Mapped raw before it was compacted: its postings are gone,
			// read it compressed from now on.
			if v, err = r.remapCompressed(n); err != nil {
				return 0, false, l.gone(err)
			}
		}
		if v.kind != viewCompressed || v.z.Version() != cseg.VersionClustered {
			return 0, false, fmt.Errorf("%w: symbol %d: postings entries dropped, but segment %d below the postings floor is not clustered", ErrCompacted, id, n)
		}
		seq, ok, err := l.fromDir(v, n, id, dst)
		if err != nil || ok {
			return seq, ok, err
		}
		if n == 0 {
			break
		}
	}
	return 0, false, nil
}

// fromDir copies into dst symbol id's last row with ts <= l.at in
// clustered compressed segment n (view v): through the directory, the
// last of the symbol's data blocks whose first row is at or before the
// time, then a binary search of its rows; ok is false when the segment
// has none.
func (l *Latest) fromDir(v *segView, n uint64, id uint32, dst []byte) (uint64, bool, error) {
	r, z, at := l.r, v.z, l.at
	first, nb, _, ok := z.Sym(id)
	if !ok {
		return 0, false, nil
	}
	lo, hi := first, first+nb
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if t, _ := z.DataBlockTs(m); t <= at {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == first {
		return 0, false, nil
	}
	k := lo - 1
	rs, cs := int(v.rs), len(dst)
	_, maxTs := z.DataBlockTs(k)
	whole := maxTs <= at // the answer is the block's last row
	c := &r.last
	if c.hrs != cs {
		c.hits, c.hrow, c.hrs = c.hits[:0], c.hrow[:0], cs
	}
	if whole && int(id) < len(c.hits) {
		if h := &c.hits[id]; h.z == z && h.n == n && h.k == k {
			copy(dst, c.hrow[int(id)*cs:])
			return h.seq, true, nil
		}
	}
	if r.closed {
		return 0, false, ErrClosed
	}
	rows, seqs, err := z.SymBlock(k, c.zrows, c.zseqs)
	c.zrows, c.zseqs = rows, seqs
	if err != nil {
		return 0, false, err
	}
	// The last row with ts <= at (the first row's is, by the index).
	i, j := 0, len(seqs)
	for i < j {
		m := int(uint(i+j) >> 1)
		if store.Row(rows[m*rs:]).Ts() <= at {
			i = m + 1
		} else {
			j = m
		}
	}
	if i == 0 {
		return 0, false, format.Corruptf(v.path, 0, "data block %d of symbol %d: no row at or before %d, its index says it starts at or before it", k, id, at)
	}
	row := rows[(i-1)*rs : i*rs]
	seq := seqs[i-1]
	if got := le.Uint32(row[r.symOff:]); got != id {
		return 0, false, format.Corruptf(v.path, 0, "data block %d of symbol %d holds symbol %d", k, id, got)
	}
	if err := r.CopyRow(seq, dst, row); err != nil {
		return 0, false, err
	}
	if i == len(seqs) {
		// Keep it: the next query of this symbol at any time from here
		// to the next block's start is answered by this row.
		if int(id) >= len(c.hits) {
			c.hits = append(c.hits, make([]zhit, int(id)+1-len(c.hits))...)
			c.hrow = append(c.hrow, make([]byte, len(c.hits)*cs-len(c.hrow))...)
		}
		c.hits[id] = zhit{z: z, n: n, k: k, seq: seq}
		copy(c.hrow[int(id)*cs:], dst)
	}
	return seq, true, nil
}

// chunkFill is the number of entries of postings block c (block j of its
// chain) for rows below vis (a block fills from its start; a version 2 or
// 3 block closed early is full).
func chunkFill(p *index.Postings, c, j, vis uint64) int {
	lo, hi := 0, p.BlockLen(j)
	for lo < hi {
		m := (lo + hi) / 2
		if e := p.Entry(c, m); e != 0 && e-1 < vis {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// lateSym is Sym for a table with late rows, where a symbol's last row by
// seq below a bound need not be its last by ts: the last row of RangeSym
// (which merges late rows in, in (ts, seq) order) over windows ending at
// the time and doubling back from lateSpan, until one holds a row or
// reaches back past every row the table can have.
func (l *Latest) lateSym(id uint32, dst []byte) (uint64, bool, error) {
	r := l.r
	if l.vis <= l.first {
		return 0, false, nil
	}
	first, err := r.Get(l.first)
	if err != nil {
		return 0, false, l.gone(err)
	}
	// No row is older than the first one's ts by more than the window.
	floor := index.LowerTs(first.Ts(), r.ctl.LateWindow())
	to := saturatingAdd(l.at, 1)
	if l.at == math.MaxInt64 {
		to = math.MaxInt64 // (a row stamped MaxInt64 is not found here)
	}
	it := &r.last.it
	for span := int64(lateSpan); ; span = saturatingAdd(span, span) {
		from := max(floor, saturatingAdd(to, -span))
		if to-from < span { // (saturated)
			from = floor
		}
		if err := r.RangeSym(from, to, id, it); err != nil {
			return 0, false, l.gone(err)
		}
		var seq uint64
		found := false
		for it.Next() {
			seq, found = it.Seq(), true
			if err := r.CopyRow(seq, dst, it.Row()); err != nil {
				return 0, false, err
			}
		}
		if err := it.Err(); err != nil {
			return 0, false, l.gone(err)
		}
		if found {
			if !format.Valid(seq, dst) {
				if err := r.ReadRow(seq, dst); err != nil {
					return 0, false, l.gone(err)
				}
				if !format.Valid(seq, dst) {
					return 0, false, fmt.Errorf("%w: row %d fails its check word", store.ErrCorrupt, seq)
				}
			}
			return seq, true, nil
		}
		if from <= floor {
			return 0, false, nil
		}
	}
}

// lateSpan is lateSym's first window: a millisecond.
const lateSpan = int64(1_000_000)

// SymbolsWithRows calls fn, if not nil, with each dictionary id below n
// that has a row among the published rows in the key sym column (the ids
// Latest answers for, as tickdb latest lists them), in id order, and
// returns how many there are: the table's symbols when other sym columns
// (tags, string fields) share its dictionary. One last-row lookup per id
// (µs each). A table without a sym column has none.
func (r *Reader) SymbolsWithRows(n int, fn func(id uint32)) (int, error) {
	if r.symOff < 0 || n <= 0 {
		return 0, nil
	}
	var l Latest
	if err := r.Latest(math.MaxInt64, &l); err != nil {
		return 0, err
	}
	row := r.schema.NewRow()
	count := 0
	for id := range n {
		_, ok, err := l.Sym(uint32(id), row)
		if err != nil {
			return count, err
		}
		if ok {
			count++
			if fn != nil {
				fn(uint32(id))
			}
		}
	}
	return count, nil
}
