package cseg

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sync"

	"github.com/tickdb/tickdb/internal/codec"
	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// encodeClustered writes format version 2: the rows grouped by the
// schema's first sym column (s.SymCol >= 0, 1 <= h.Rows <= 2^32-1). Every
// row is verified first, as for version 1. Up to workers goroutines share
// the verification and the data blocks (a range of symbols each), and one
// more builds the rank frames beside them; the file is the same bytes
// whatever workers is.
func encodeClustered(w io.Writer, s *store.Schema, h Header, rows []byte, srcPath string, lvl codec.Level, workers int, stop <-chan struct{}) (Stats, error) {
	e := newEncoder(s, h, srcPath, 0)
	e.level, e.stop = lvl, stop
	n := int(h.Rows)
	workers = min(max(workers, 1), int(numBlocks(h.Rows)))

	// Verify every row, and collect the ids.
	ids := make([]uint32, n)
	if err := e.verifyIDs(rows, ids, workers); err != nil {
		return Stats{}, err
	}

	// Directory slots in id order, rows per slot, and each row's slot.
	slotOf, dir := assignSlots(ids)
	rowSlot := ids // reused in place: ids are not needed past this point
	for i, id := range ids {
		rowSlot[i] = slotOf(id)
	}
	start := make([]int, len(dir)+1)
	for _, sl := range rowSlot {
		start[sl+1]++
	}
	for j := range dir {
		start[j+1] += start[j]
	}
	perm := make([]uint32, n) // row indexes grouped by slot, each group in seq order
	pos := slices.Clone(start[:len(dir)])
	for i, sl := range rowSlot {
		perm[pos[sl]] = uint32(i)
		pos[sl]++
	}

	// Data blocks, symbol by symbol, each part a run of symbols of about
	// n/workers rows with an encoder of its own; the rank frames beside
	// them.
	parts := make([]*encoder, 0, workers)
	bounds := []int{0}
	for j := range dir {
		if start[j+1] >= (len(bounds))*n/workers || j == len(dir)-1 {
			bounds = append(bounds, j+1)
			parts = append(parts, newEncoder(s, h, srcPath, (start[j+1]-start[bounds[len(bounds)-2]])*h.RowSize))
		}
	}
	errs := make([]error, len(parts))
	var ranks []rankEnt
	var rankOut []byte
	var wg sync.WaitGroup
	if workers > 1 {
		wg.Go(func() { ranks, rankOut = e.rankFrames(rows, rowSlot, len(dir)) })
	}
	for k, pe := range parts {
		pe.level, pe.stop = lvl, stop
		run := func() {
			pe.offs = make([]int64, min(n, BlockRows))
			for j := bounds[k]; j < bounds[k+1]; j++ {
				d := &dir[j]
				d.first = len(pe.entries)
				d.rows = uint64(start[j+1] - start[j])
				for lo := start[j]; lo < start[j+1]; lo += BlockRows {
					if pe.stopped() {
						errs[k] = ErrStopped
						return
					}
					if err := pe.dataBlock(j, perm[lo:min(lo+BlockRows, start[j+1])], rows); err != nil {
						errs[k] = err
						return
					}
				}
				d.nblocks = len(pe.entries) - d.first
				d.minTs, d.maxTs = blocksTs(pe.entries[d.first:])
			}
		}
		if k == len(parts)-1 {
			run() // the last part on this goroutine
		} else {
			wg.Go(run)
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return Stats{}, err // the first part's: the lowest symbol's, as in order
		}
	}
	if workers == 1 {
		ranks, rankOut = e.rankFrames(rows, rowSlot, len(dir))
	}
	if e.stopped() {
		return Stats{}, ErrStopped // rankFrames gave up
	}

	// The parts' blocks end to end, then the rank frames.
	bodies := make([][]byte, 0, len(parts)+1)
	dataLen := 0
	for k, pe := range parts {
		for j := bounds[k]; j < bounds[k+1]; j++ {
			dir[j].first += len(e.entries)
		}
		for _, ent := range pe.entries {
			ent.off += int64(dataLen)
			e.entries = append(e.entries, ent)
		}
		e.colLens = append(e.colLens, pe.colLens...)
		for c, b := range pe.colBytes {
			e.colBytes[c] += b
		}
		e.seqBytes += pe.seqBytes
		bodies = append(bodies, pe.out)
		dataLen += len(pe.out)
	}
	for r := range ranks {
		ranks[r].off += int64(headerSize + dataLen)
	}
	bodies = append(bodies, rankOut)
	nranks := len(ranks)
	outLen := dataLen + len(rankOut)

	// Header, data blocks, rank frames, zero padding to 8, block index,
	// 4 zero bytes, directory, 4 zero bytes, rank table.
	nblocks := len(e.entries)
	blocksEnd := int64(headerSize + outLen)
	indexOff := (blocksEnd + 7) &^ 7
	es := entrySize(len(s.Cols))
	indexLen := int64(nblocks*es + 4)
	dirOff := indexOff + indexLen + tableGap
	dirLen := int64(len(dir)*dirEntry + 4)
	rankOff := dirOff + dirLen + tableGap
	rankLen := int64(nranks*rankEntry + 4)
	tail := make([]byte, rankOff+rankLen-blocksEnd)
	index := tail[indexOff-blocksEnd:]
	for b, ent := range e.entries {
		putEntry(index[b*es:], ent, e.colLens[b*len(s.Cols):(b+1)*len(s.Cols)])
	}
	le.PutUint32(index[nblocks*es:], format.CRC32C(index[:nblocks*es]))
	dt := tail[dirOff-blocksEnd:]
	for j, d := range dir {
		x := dt[j*dirEntry:]
		le.PutUint32(x[dId:], d.id)
		le.PutUint32(x[dFirst:], uint32(d.first))
		le.PutUint32(x[dBlocks:], uint32(d.nblocks))
		le.PutUint64(x[dRows:], d.rows)
		le.PutUint64(x[dMinTs:], uint64(d.minTs))
		le.PutUint64(x[dMaxTs:], uint64(d.maxTs))
	}
	le.PutUint32(dt[len(dir)*dirEntry:], format.CRC32C(dt[:len(dir)*dirEntry]))
	rt := tail[rankOff-blocksEnd:]
	for r, k := range ranks {
		x := rt[r*rankEntry:]
		le.PutUint64(x[rOff:], uint64(k.off))
		le.PutUint32(x[rLen:], uint32(k.len))
		le.PutUint32(x[rCRC:], k.crc)
		le.PutUint32(x[rPresent:], uint32(k.present))
		le.PutUint64(x[rMinTs:], uint64(k.minTs))
		le.PutUint64(x[rMaxTs:], uint64(k.maxTs))
	}
	le.PutUint32(rt[nranks*rankEntry:], format.CRC32C(rt[:nranks*rankEntry]))

	header := make([]byte, headerSize)
	putHeaderFields(header, s, h, nblocks, indexOff, indexLen, VersionClustered, e.flags())
	le.PutUint32(header[h2SymCol:], uint32(e.symCol))
	le.PutUint32(header[h2Syms:], uint32(len(dir)))
	le.PutUint32(header[h2Ranks:], uint32(nranks))
	le.PutUint64(header[h2DirOff:], uint64(dirOff))
	le.PutUint64(header[h2DirLen:], uint64(dirLen))
	le.PutUint64(header[h2RankOff:], uint64(rankOff))
	le.PutUint64(header[h2RankLen:], uint64(rankLen))
	le.PutUint32(header[h2Check:], format.CRC32C(header[:h2Check]))
	for _, p := range append(append([][]byte{header}, bodies...), tail) {
		if _, err := w.Write(p); err != nil {
			return Stats{}, fmt.Errorf("cseg: write segment %d: %w", h.SegNo, err)
		}
	}
	orderBytes := int64(len(rankOut)) + dirLen + rankLen
	e.colBytes[e.symCol] = orderBytes // the sym column is carried by the seq-order index
	return Stats{
		Rows:       h.Rows,
		RawBytes:   int64(len(rows)),
		Bytes:      rankOff + rankLen,
		ColBytes:   e.colBytes,
		SeqBytes:   e.seqBytes,
		OrderBytes: orderBytes,
	}, nil
}

// rankFrames builds the rank frames: for each 4,096 rows in seq order,
// their slots, the slots present and each present slot's rows before the
// rank block. The entries' offsets are from the start of the frames.
func (e *encoder) rankFrames(rows []byte, rowSlot []uint32, nslots int) ([]rankEnt, []byte) {
	n, rs := len(rowSlot), e.rs
	nranks := int(numBlocks(uint64(n)))
	ranks := make([]rankEnt, nranks)
	out := make([]byte, 0, n/2+4096)
	before := make([]int64, nslots)
	seen := make([]int32, nslots)
	var present []uint32
	var counts []int64
	var raw []byte
	var state codec.State
	for r := range nranks {
		if e.stopped() {
			return nil, nil // the caller sees it stopped too
		}
		sl := rowSlot[r*BlockRows : min((r+1)*BlockRows, n)]
		present = present[:0]
		for _, x := range sl {
			if seen[x] != int32(r+1) {
				seen[x] = int32(r + 1)
				present = append(present, x)
			}
		}
		slices.Sort(present)
		counts = counts[:0]
		for _, x := range present {
			counts = append(counts, before[x])
		}
		for _, x := range sl {
			before[x]++
		}
		raw = appendSlots(raw[:0], sl, nslots)
		raw = codec.AppendU32(raw, present)
		raw = codec.AppendI64(raw, counts, nil, &state)
		at := len(out)
		out = codec.Compress(out, raw, e.level)
		lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
		for i := r * BlockRows; i < r*BlockRows+len(sl); i++ {
			t := int64(le.Uint64(rows[i*rs:]))
			lo, hi = min(lo, t), max(hi, t)
		}
		ranks[r] = rankEnt{off: int64(at), len: len(out) - at, crc: format.CRC32C(out[at:]), present: len(present),
			minTs: lo, maxTs: hi}
	}
	return ranks, out
}

// verifyIDs verifies every row (verifyBlock) and copies the sym column
// into ids, on up to workers goroutines, each a run of blocks. A run's
// rows are checked against the newest ts before them once all are done;
// on any error the rows are verified again in order on one goroutine, so
// the error is the first bad row's, as it would be without workers.
func (e *encoder) verifyIDs(rows []byte, ids []uint32, workers int) error {
	nb := int(numBlocks(e.h.Rows))
	symOff := e.cols[e.symCol].Off
	seq := func(pe *encoder, from, to int) error {
		for b := from; b < to; b++ {
			if e.stopped() {
				return ErrStopped
			}
			lo, hi := b*BlockRows, min((b+1)*BlockRows, len(ids))
			if err := pe.verifyBlock(b, rows[lo*pe.rs:hi*pe.rs], pe.ts[:hi-lo]); err != nil {
				return err
			}
			gatherU32(ids[lo:hi], rows[lo*pe.rs:hi*pe.rs], pe.rs, symOff)
		}
		return nil
	}
	if workers <= 1 {
		return seq(e, 0, nb)
	}
	runs := make([]*encoder, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for k := range runs {
		pe := &encoder{layout: e.layout, h: e.h, path: e.path, ts: make([]int64, BlockRows), lastTs: math.MinInt64}
		runs[k] = pe
		wg.Go(func() { errs[k] = seq(pe, k*nb/workers, (k+1)*nb/workers) })
	}
	wg.Wait()
	ok := !slices.ContainsFunc(errs, func(err error) bool { return err != nil })
	for k := 0; ok && k < workers; k++ {
		if k > 0 {
			ok = e.lateAgainst(rows, k*nb/workers*BlockRows, len(ids))
		}
		e.late = e.late || runs[k].late
		e.lastTs = max(e.lastTs, runs[k].lastTs)
	}
	if ok {
		return nil
	}
	e.lastTs, e.late = math.MinInt64, false
	return seq(e, 0, nb)
}

// lateAgainst checks rows [from, to) from the first against e.lastTs, the
// newest ts before them, up to the first at or past it: each before it is
// late (within the window: e.late) or bad (false).
func (e *encoder) lateAgainst(rows []byte, from, to int) bool {
	for i := from; i < to; i++ {
		t := int64(le.Uint64(rows[i*e.rs:]))
		if t >= e.lastTs {
			return true
		}
		if uint64(e.lastTs)-uint64(t) > uint64(e.h.LateWindow) {
			return false
		}
		e.late = true
	}
	return true
}

// assignSlots returns the directory of the distinct ids (ascending; only
// id is set) and a function from an id to its slot.
func assignSlots(ids []uint32) (func(uint32) uint32, []dirEnt) {
	var hi uint32
	for _, id := range ids {
		hi = max(hi, id)
	}
	var dir []dirEnt
	if uint64(hi) < 1<<20 || uint64(hi) < 4*uint64(len(ids)) {
		dense := make([]uint32, uint64(hi)+1) // slot+1 by id
		for _, id := range ids {
			dense[id] = 1
		}
		for id, x := range dense {
			if x != 0 {
				dense[id] = uint32(len(dir)) + 1
				dir = append(dir, dirEnt{id: uint32(id)})
			}
		}
		return func(id uint32) uint32 { return dense[id] - 1 }, dir
	}
	m := make(map[uint32]uint32)
	for _, id := range ids {
		m[id] = 0
	}
	for id := range m {
		dir = append(dir, dirEnt{id: id})
	}
	slices.SortFunc(dir, func(a, b dirEnt) int { return cmpU32(a.id, b.id) })
	for j, d := range dir {
		m[d.id] = uint32(j)
	}
	return func(id uint32) uint32 { return m[id] }, dir
}

func cmpU32(a, b uint32) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// dataBlock compresses one version 2 data block: the rows idx (row indexes
// in the segment, ascending, all of slot's symbol) of rows.
func (e *encoder) dataBlock(slot int, idx []uint32, rows []byte) error {
	m, rs := len(idx), e.rs
	ts := e.ts[:m]
	offs := e.offs[:m]
	for i, r := range idx {
		ts[i] = int64(le.Uint64(rows[int(r)*rs:]))
		offs[i] = int64(r)
	}
	start := len(e.out)
	for c, col := range e.cols {
		raw := e.raw[:0]
		switch {
		case c == e.symCol:
			d := e.i64[:m]
			for i := range offs {
				if i == 0 {
					d[i] = unzigzag(uint64(offs[0]))
				} else {
					d[i] = unzigzag(uint64(offs[i] - offs[i-1] - 1))
				}
			}
			raw = codec.AppendI64(raw, d, nil, &e.state)
		case col.Type == store.TypeTs:
			// A symbol's ts follow the segment's clock: ts of a row
			// less rate times its seq distance from the block's first
			// row varies far less than ts itself.
			rate := tsRate(ts, offs)
			raw = le.AppendUint64(raw, uint64(rate))
			d := e.i64[:m]
			for i := range ts {
				d[i] = ts[i] - rate*(offs[i]-offs[0])
			}
			raw = codec.AppendTs(raw, d)
		case col.Type == store.TypeSym:
			v := e.u32[:m]
			for i, r := range idx {
				v[i] = le.Uint32(rows[int(r)*rs+col.Off:])
			}
			raw = codec.AppendU32(raw, v)
		case col.Type == store.TypeF64:
			v := e.f64[:m]
			for i, r := range idx {
				v[i] = math.Float64frombits(le.Uint64(rows[int(r)*rs+col.Off:]))
			}
			raw = codec.AppendF64(raw, v, nil, &e.state)
		case col.Type == store.TypeI64:
			v := e.i64[:m]
			for i, r := range idx {
				v[i] = int64(le.Uint64(rows[int(r)*rs+col.Off:]))
			}
			raw = codec.AppendI64(raw, v, nil, &e.state)
		case col.Type == store.TypeBool:
			v := e.bools[:m]
			for i, r := range idx {
				x := rows[int(r)*rs+col.Off]
				if x > 1 {
					return format.Corruptf(e.path, e.rowOff(int(r)), "row %d (seq %d): bool column %q holds %d",
						r, e.h.baseSeq()+uint64(r), e.names[c], x)
				}
				v[i] = x == 1
			}
			raw = codec.AppendBool(raw, v)
		default:
			return fmt.Errorf("%w: column %q has type %v", ErrArgs, e.names[c], col.Type)
		}
		if n := e.appendFrame(raw); c == e.symCol {
			e.seqBytes += n
		} else {
			e.colBytes[c] += n
		}
	}
	e.entries = append(e.entries, blockEntry{
		off:   int64(headerSize + start),
		len:   len(e.out) - start,
		rows:  m,
		minTs: slices.Min(ts),
		maxTs: slices.Max(ts),
		crc:   format.CRC32C(e.out[start:]),
		slot:  slot,
	})
	return nil
}

// slotWidth is the bytes per slot in a rank frame's slot list for a
// segment of nsyms symbols: 1 up to 256 symbols, 2 up to 65536, else 0 (a
// codec u32 block). Whole bytes let zstd entropy-code the slots (symbols
// are far from equally active), which bit-packing at 7 bits would hide.
func slotWidth(nsyms int) int {
	switch {
	case nsyms <= 1<<8:
		return 1
	case nsyms <= 1<<16:
		return 2
	}
	return 0
}

// appendSlots appends the slot list of a rank frame.
func appendSlots(dst []byte, sl []uint32, nsyms int) []byte {
	switch slotWidth(nsyms) {
	case 1:
		for _, x := range sl {
			dst = append(dst, byte(x))
		}
		return dst
	case 2:
		for _, x := range sl {
			dst = append(dst, byte(x), byte(x>>8))
		}
		return dst
	}
	return codec.AppendU32(dst, sl)
}

// tsRate is the ns per row of a data block: its ts span over its seq span
// (0 for one row), rounded down.
func tsRate(ts, offs []int64) int64 {
	n := len(ts)
	if n < 2 || offs[n-1] == offs[0] || ts[n-1] < ts[0] {
		return 0
	}
	return (ts[n-1] - ts[0]) / (offs[n-1] - offs[0])
}

// The seq column stores gaps, which are never negative: it hands the i64
// codec unzigzag(gap), so that the codec's zigzag varints are the gaps'
// own varints (a plain zigzag of a gap would spend a bit on a sign).
func zigzag(x int64) uint64   { return uint64(x<<1) ^ uint64(x>>63) }
func unzigzag(u uint64) int64 { return int64(u>>1) ^ -int64(u&1) }
