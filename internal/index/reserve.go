package index

import (
	"fmt"
	"math/bits"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/mmap"
)

// Reservations: how much virtual address space a mapping of an index
// file takes.
//
// A reader maps each file with its kind's largest size (postings 256
// GiB, late rows 64 GiB, time index and dictionary 16 GiB: 352 GiB a
// table), so the file can grow under the mapping for as long as the
// reader lives. A process has 128 TiB of user address space, so at that
// size about 370 tables fit in one, whatever they hold: a server with a
// table per venue and instrument class reaches a thousand.
//
// The writer therefore maps each file with a reservation that follows its
// size: sixteen times the file, rounded up to a power of two, at least a
// floor (1 GiB; the dictionary 4 GiB) and at most the kind's largest. A
// table of a few rows costs 7 GiB of address space, so a thousand take
// 7 TiB. When a file has grown to a quarter of its reservation, or to
// within a margin the writer gives of its end, the writer maps it again,
// larger (Remap: TimeIndex, Postings, LateIndex), at a moment when no
// other goroutine touches the mapping (writer.Writer's roll to the next
// segment and a new symbol; its preparer and checkpointer are held for
// the call). The dictionary is not remapped (its flusher reads it at any
// time): its floor is 4 GiB, more than a hundred million symbols a
// writer session. Earlier mappings stay mapped until Close, so a slice
// still pointing into one reads and writes the same file pages.
const (
	writerFloor    = 1 << 30
	writerSymFloor = 1 << 32
)

// writerReserve is the writer's reservation for an index file of kind
// magic and size bytes whose kind takes at most most bytes.
func writerReserve(size int64, magic string, most int) int {
	floor := writerFloor
	if magic == format.MagicSym {
		floor = writerSymFloor
	}
	return nextReserve(size, floor, most)
}

// nextReserve is sixteen times size rounded up to a power of two, within
// [floor, most].
func nextReserve(size int64, floor, most int) int {
	r := int64(1) << min(62, bits.Len64(uint64(max(size, 1)-1))+4)
	return int(min(max(r, int64(floor)), int64(most)))
}

// tight reports whether the writer should map the file again, larger:
// it has grown to a quarter of its reservation, or to within margin
// bytes of its end, and a larger one is allowed. urgent reports the
// second, or half the reservation used: then the writer waits for the
// moment to remap rather than try again later.
func (m *mappedFile) tight(margin int64) bool {
	size, r := m.size.Load(), int64(len(m.b))
	return r < int64(m.max) && (size > r/4 || r-size < margin)
}

func (m *mappedFile) urgent(margin int64) bool {
	size, r := m.size.Load(), int64(len(m.b))
	return r < int64(m.max) && (size > r/2 || r-size < margin)
}

// remap maps the writer's file again with reserve bytes (0: the next
// reservation for its size, at least twice the present one), and keeps
// the old mapping until Close. No other goroutine may use the mapping
// meanwhile; the caller rebuilds its views of it. The room grown ahead,
// pre-faulted in the old mapping, is not in the new one: populate does
// that, off the writer's goroutine.
func (m *mappedFile) remap(reserve int) error {
	size := m.size.Load()
	if reserve <= 0 {
		reserve = min(m.max, max(nextReserve(size, len(m.b), m.max), 2*len(m.b)))
	}
	reserve = max(reserve, int(size+format.BlockSize-1)&^(format.BlockSize-1))
	if reserve == len(m.b) {
		return nil
	}
	f, err := m.file()
	if err != nil {
		return err
	}
	b, err := mmap.MapShared(f.File, reserve, true)
	f.Close()
	if err != nil {
		return fmt.Errorf("index: map %s again: %w", m.Path, err)
	}
	_ = mmap.AdviseRandom(b)
	m.old = append(m.old, m.b)
	m.b = b
	return nil
}

// populate pre-faults the file from byte from to its end, writable: the
// room grown ahead of the writer, after a remap (the writer's preparer;
// the writer may be storing there meanwhile). Pre-faulting 64 MiB of
// post.idx at the roll took the writer 12.7 ms; leaving it to the writer
// cost about 16,000 faults of a few µs each, spread over its appends.
func (m *mappedFile) populate(from int64) {
	m.growMu.Lock()
	defer m.growMu.Unlock()
	size := m.size.Load()
	from = min(max(from, 0), size) &^ (format.BlockSize - 1)
	_ = mmap.PopulateWrite(m.b[from:size])
}

// Reserved is the bytes of address space the writer's mapping takes.
func (m *mappedFile) reserved() int64 { return int64(len(m.b)) }

// Tight reports whether the writer should Remap the time index: it has
// used a quarter of its reservation, or all but margin bytes.
func (t *TimeIndex) Tight(margin int64) bool { return t.m.tight(margin) }

// Urgent is Postings.Urgent for the time index.
func (t *TimeIndex) Urgent(margin int64) bool { return t.m.urgent(margin) }

// Remap maps the time index again with reserve bytes of address space
// (0: the next size up). Writer side, with no other goroutine using it.
func (t *TimeIndex) Remap(reserve int) error {
	if err := t.m.remap(reserve); err != nil {
		return err
	}
	t.w = mmap.Words(t.m.b[format.BlockSize:])
	return nil
}

// Tight is TimeIndex.Tight for the postings.
func (p *Postings) Tight(margin int64) bool { return p.m.tight(margin) }

// Urgent reports whether the writer must Remap the postings now: half
// their reservation is used, or all but margin bytes.
func (p *Postings) Urgent(margin int64) bool { return p.m.urgent(margin) }

// Remap is TimeIndex.Remap for the postings; the writer's PostWriter
// then needs Rebind.
func (p *Postings) Remap(reserve int) error {
	if err := p.m.remap(reserve); err != nil {
		return err
	}
	p.b, p.w = p.m.b, mmap.Words(p.m.b)
	return nil
}

// Rebind points the PostWriter at its postings' mapping after a Remap.
func (pw *PostWriter) Rebind() { pw.b, pw.w = pw.p.b, pw.p.w }

// Tight is TimeIndex.Tight for late.idx.
func (l *LateIndex) Tight(margin int64) bool { return l.m.tight(margin) }

// Urgent is Postings.Urgent for late.idx.
func (l *LateIndex) Urgent(margin int64) bool { return l.m.urgent(margin) }

// Remap is TimeIndex.Remap for late.idx.
func (l *LateIndex) Remap(reserve int) error {
	if err := l.m.remap(reserve); err != nil {
		return err
	}
	l.b = l.m.b[format.BlockSize:]
	return nil
}

// PopulateFrom pre-faults the time index from entry next on, the room
// grown ahead, after a Remap. Writer side (its preparer).
func (t *TimeIndex) PopulateFrom(next uint64) { t.m.populate(format.BlockSize + int64(next)*8) }

// PopulateFrom is TimeIndex.PopulateFrom for the postings, from address
// next (the published NextChunk) on.
func (p *Postings) PopulateFrom(next uint64) { p.m.populate(int64(next) << p.shift) }

// PopulateFrom is TimeIndex.PopulateFrom for late.idx.
func (l *LateIndex) PopulateFrom(next uint64) {
	l.m.populate(format.BlockSize + int64(next)*LateEntrySize)
}

// Reserved is the address space the index files' mappings take (the
// writer's, earlier ones left out).
func Reserved(t *TimeIndex, p *Postings, l *LateIndex, s *Symbols) int64 {
	return t.m.reserved() + p.m.reserved() + l.m.reserved() + s.m.reserved()
}
