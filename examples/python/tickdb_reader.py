#!/usr/bin/env python3
"""Read a tickdb table with numpy.memmap, from docs/FORMAT.md alone.

This reader shows that the on-disk format is readable from another language.
It works on a closed table and on a live one (a writer appending in another
process): it reads the published words of ``ctl`` under the seqlock, takes
each segment's rows from its live slot or its durable file as FORMAT.md §4
prescribes, verifies every row's check word and every dictionary entry's
CRC32C, and returns the rows as a numpy structured array whose dtype is built
from the column offsets stored in the schema.

Like tickdb's own readers it only opens files read-only and never writes,
creates or locks anything.

Library use::

    import tickdb_reader as tr
    t = tr.open_table("tickdata", "trades")
    snap = t.read()                 # a consistent snapshot of published rows
    snap.rows["price"]              # numpy columns
    snap.names("sym")               # sym ids -> names (str)
    t.close()

Command line::

    python3 tickdb_reader.py DB TABLE [--sym NAME] [--head N] [--format text|json]

Section numbers (§) refer to docs/FORMAT.md.
"""

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

# ---------------------------------------------------------------- errors


class TickDBError(Exception):
    """Base class of this module's errors."""


class CorruptError(TickDBError):
    """A failed check: names the file and the byte offset (§9)."""

    def __init__(self, path, offset, reason):
        super().__init__(f"tickdb: corrupt {path} at offset {offset}: {reason}")
        self.path = path
        self.offset = offset
        self.reason = reason


class VersionError(TickDBError):
    """A file has a format version this reader does not know (§10)."""


class BusyError(TickDBError):
    """The seqlock stayed odd (a writer died mid-publish, §4): no guessing."""


class UnavailableError(TickDBError):
    """Published rows whose live copy is gone and that are not durable (§9)."""

    def __init__(self, seq, visible):
        super().__init__(
            f"tickdb: rows [{seq}, {visible}) are published but not durable and "
            f"their live copy is gone; a writer reopening the table cuts them")
        self.seq = seq
        self.visible = visible


# ---------------------------------------------------------------- CRC32C


def _crc32c_table():
    poly = 0x82F63B78  # Castagnoli, reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data, crc=0):
    """CRC32C (Castagnoli) of data, as Go's crc32.Checksum with crc32.Castagnoli.

    Pass a previous result as crc to continue over more bytes.
    """
    crc ^= 0xFFFFFFFF
    table = _CRC_TABLE
    for b in bytes(data):
        crc = table[(crc ^ b) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


# ---------------------------------------------------------------- row check (§2)

_MASK64 = (1 << 64) - 1
_M0 = 0x9E3779B97F4A7C15
_STEP = 0x3C6EF372FE94F82A
_SEED = 0x5851F42D4C957F2D
_FMIX = 0xFF51AFD7ED558CCD


def row_checks(words, seqs):
    """Compute the check word of each row.

    words: uint64 array of shape (n, rowSize/8), the rows as little-endian u64
    words (the last word holds the u32 before the check word in its low half
    and the stored check word in its high half). seqs: the rows' sequence
    numbers. Returns a uint32 array of the expected check words.
    """
    k = words.shape[1] - 1  # full words before the last one
    mult = []
    m = _M0
    for _ in range(k + 1):
        m = (m + _STEP) & _MASK64
        mult.append(m)
    mult = np.array(mult, dtype=np.uint64)
    u64 = np.uint64
    with np.errstate(over="ignore"):  # uint64 arithmetic wraps mod 2^64, as the format wants
        h = np.asarray(seqs, dtype=np.uint64) * u64(_M0) + u64(_SEED)
        if k:
            h += (words[:, :k] * mult[:k]).sum(axis=1, dtype=np.uint64)
        h += (words[:, k] & u64(0xFFFFFFFF)) * mult[k]
        h ^= h >> u64(33)
        h *= u64(_FMIX)
        h ^= h >> u64(33)
    return (h & u64(0xFFFFFFFF)).astype(np.uint32)


def verify_rows(buf, row_size, first_seq, path, file_offset):
    """Verify the check words of consecutive rows copied from path.

    buf holds n rows (n*row_size bytes) starting at sequence number first_seq,
    copied from byte file_offset of path. Raises CorruptError naming the file
    and the offset of the first bad row.
    """
    n = len(buf) // row_size
    if n == 0:
        return
    words = np.frombuffer(buf, dtype="<u8").reshape(n, row_size // 8)
    seqs = np.arange(first_seq, first_seq + n, dtype=np.uint64)
    want = row_checks(words, seqs)
    got = (words[:, -1] >> np.uint64(32)).astype(np.uint32)
    bad = np.flatnonzero(got != want)
    if bad.size:
        i = int(bad[0])
        raise CorruptError(
            path, file_offset + i * row_size,
            f"row seq {first_seq + i}: check word 0x{int(got[i]):08x}, want 0x{int(want[i]):08x}")


# ---------------------------------------------------------------- layout constants

VERSION = 1
CTL_SIZE = 8192
BLOCK = 4096
TYPE_TS, TYPE_SYM, TYPE_F64, TYPE_I64, TYPE_BOOL = 1, 2, 3, 4, 5
TYPE_NAMES = {TYPE_TS: "ts", TYPE_SYM: "sym", TYPE_F64: "f64", TYPE_I64: "i64", TYPE_BOOL: "bool"}
_TYPE_DTYPE = {TYPE_TS: "<i8", TYPE_SYM: "<u4", TYPE_F64: "<f8", TYPE_I64: "<i8", TYPE_BOOL: "?"}
_TYPE_WIDTH = {TYPE_TS: 8, TYPE_SYM: 4, TYPE_F64: 8, TYPE_I64: 8, TYPE_BOOL: 1}

# ctl page 1 (§4): byte offsets of the published words.
OFF_SEQLOCK = 4096
OFF_VISIBLE = 4104
OFF_LAST_TS = 4112
OFF_FIRST_SEQ = 4120
OFF_NEXT_CHUNK = 4128
OFF_SYM_COUNT = 4160
OFF_SYM_BYTES = 4168
OFF_LIVE_GEN = 4176
OFF_WRITER_PID = 4184
OFF_STATE = 4192
OFF_OUT_OF_ORDER = 4200
OFF_BOOT_ID = 4208
OFF_DURABLE = 4224
OFF_DURABLE_SEGS = 4232
OFF_CK_SEQ = 4240
OFF_FLUSHES = 4264
OFF_CMP_SEGS = 4272  # compaction mark: segments below it are seg-N.zdat (§10)
OFF_FEATURES = 4312  # format feature bits (§12): refuse a table with one this reader does not know
KNOWN_FEATURES = 0b111  # late rows (read in arrival order), postings floor, clustered compressed segments
OFF_SLOTS = 4352
OFF_LIVE_DIR = 4864


def _u32(b, off):
    return int.from_bytes(b[off:off + 4], "little")


def _u64(b, off):
    return int.from_bytes(b[off:off + 8], "little")


def _i64(b, off):
    return int.from_bytes(b[off:off + 8], "little", signed=True)


def _map(path):
    """Map a whole file read-only and shared (numpy's mode 'r' is MAP_SHARED)."""
    return np.memmap(path, dtype=np.uint8, mode="r")


def _boot_id():
    """This machine's boot id as 16 bytes (the UUID's hex digits), or None."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as f:
            return bytes.fromhex(f.read().strip().replace("-", ""))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- schema


@dataclass(frozen=True)
class Column:
    name: str
    type: int
    offset: int

    @property
    def type_name(self):
        return TYPE_NAMES[self.type]


@dataclass(frozen=True)
class Published:
    """A consistent copy of the words published under the seqlock (§4)."""
    visible: int
    last_ts: int
    first_seq: int
    next_chunk: int


@dataclass
class Snapshot:
    """Rows [first_seq, first_seq+len(rows)) of a table, as read at one moment.

    rows is a numpy structured array (dtype Table.dtype, itemsize rowSize)
    that owns its memory: it stays valid after the table is closed.
    """
    rows: np.ndarray
    first_seq: int
    visible: int
    last_ts: int
    durable: int
    durable_segs: int
    symbols: list          # id -> name as bytes
    unavailable: int = 0   # published rows after the returned ones that could not be read

    def seqs(self):
        """The sequence numbers of rows."""
        return np.arange(self.first_seq, self.first_seq + len(self.rows), dtype=np.uint64)

    def symbol(self, sym_id):
        """The name (str, UTF-8 with undecodable bytes escaped) of a sym id."""
        return self.symbols[sym_id].decode("utf-8", "backslashreplace")

    def names(self, column):
        """The names of a sym column's values, as a list of str."""
        decoded = [s.decode("utf-8", "backslashreplace") for s in self.symbols]
        return [decoded[i] for i in self.rows[column].tolist()]


# ---------------------------------------------------------------- the table


class Table:
    """A tickdb table opened read-only.

    Not safe for concurrent use by several threads; open one per thread.
    """

    def __init__(self, db, table):
        self.dir = os.path.join(db, table)
        self.ctl_path = os.path.join(self.dir, "ctl")
        self._ctl = _map(self.ctl_path)
        if len(self._ctl) < CTL_SIZE:
            raise CorruptError(self.ctl_path, len(self._ctl), f"file is {len(self._ctl)} bytes, want {CTL_SIZE}")
        # Page 1 as u64 words: each element read goes to the shared mapping,
        # so it sees the writer's latest stores (8-aligned loads are atomic).
        self._words = self._ctl[:CTL_SIZE].view("<u8")
        self._parse_header(bytes(self._ctl[:BLOCK]))
        features = int(self._words[OFF_FEATURES // 8])
        if features & ~KNOWN_FEATURES:
            raise VersionError(
                f"tickdb: {self.ctl_path}: format features {features:#x}, this reader knows {KNOWN_FEATURES:#x} "
                f"(the table was written by a newer tickdb)")
        self._sym_path = os.path.join(self.dir, "sym.dat")
        self._sym_names = []   # parsed dictionary entries, id order
        self._sym_off = BLOCK  # offset of the next entry to parse
        self._sym_map = None

    # -- page 0

    def _parse_header(self, h):
        p = self.ctl_path
        if h[0:8] != b"TICKCTL\0":
            raise CorruptError(p, 0, f"magic {h[0:8]!r}, want b'TICKCTL\\x00'")
        if _u32(h, 8) != VERSION:
            raise VersionError(f"tickdb: {p}: format version {_u32(h, 8)}, this reader knows {VERSION}")
        got, want = _u32(h, 4092), crc32c(h[:4092])
        if got != want:
            raise CorruptError(p, 4092, f"header check 0x{got:08x}, want 0x{want:08x}")
        self.live_slots = _u32(h, 12)
        self.table_id = h[16:32]
        self.seg_shift = _u32(h, 32)
        self.stride_shift = _u32(h, 36)
        self.chunk_words = _u32(h, 40)
        self.created = _i64(h, 48)
        if not 2 <= self.live_slots <= 32:
            raise CorruptError(p, 12, f"liveSlots {self.live_slots}, want 2..32")
        if self.seg_shift > 40:
            raise CorruptError(p, 32, f"segShift {self.seg_shift} too large")
        self.rows_per_seg = 1 << self.seg_shift

        ncols, self.row_size = _u32(h, 64), _u32(h, 68)
        if ncols == 0 or 72 + ncols * 64 > 4092:
            raise CorruptError(p, 64, f"ncols {ncols}")
        if self.row_size < 16 or self.row_size % 8:
            raise CorruptError(p, 68, f"rowSize {self.row_size}, want a multiple of 8 >= 16")
        cols = []
        for i in range(ncols):
            e = 72 + i * 64
            name = h[e:e + 56].split(b"\0", 1)[0].decode("utf-8")
            typ, off = h[e + 56], int.from_bytes(h[e + 58:e + 60], "little")
            if typ not in TYPE_NAMES:
                raise CorruptError(p, e + 56, f"column {name!r}: type {typ}")
            if off + _TYPE_WIDTH[typ] > self.row_size - 4:
                raise CorruptError(p, e + 58, f"column {name!r}: offset {off} outside the row")
            cols.append(Column(name, typ, off))
        if cols[0].type != TYPE_TS or cols[0].offset != 0:
            raise CorruptError(p, 72, "column 0 is not ts at offset 0")
        self.columns = cols
        self.dtype = np.dtype({
            "names": [c.name for c in cols],
            "formats": [_TYPE_DTYPE[c.type] for c in cols],
            "offsets": [c.offset for c in cols],
            "itemsize": self.row_size,
        })

    # -- page 1

    def _word(self, off):
        return int(self._words[off // 8])

    def published(self, timeout=1.0):
        """The consistent set of published words, read under the seqlock.

        Retries while the seqlock is odd or changed; raises BusyError after
        timeout seconds (a writer killed mid-publish leaves it odd, §4).
        """
        deadline = time.monotonic() + timeout
        spins = 0
        while True:
            s1 = self._word(OFF_SEQLOCK)
            if not s1 & 1:
                visible = self._word(OFF_VISIBLE)
                last_ts = self._word(OFF_LAST_TS)
                first_seq = self._word(OFF_FIRST_SEQ)
                next_chunk = self._word(OFF_NEXT_CHUNK)
                if self._word(OFF_SEQLOCK) == s1:
                    if last_ts >= 1 << 63:
                        last_ts -= 1 << 64
                    return Published(visible, last_ts, first_seq, next_chunk)
            spins += 1
            if spins > 100:
                if time.monotonic() > deadline:
                    raise BusyError(f"tickdb: {self.ctl_path}: seqlock held for {timeout}s (writer died mid-publish?)")
                time.sleep(0.0005)

    def counters(self):
        """Every page-1 word, for display (the group is not read atomically)."""
        pub = self.published()
        return {
            "visible": pub.visible, "first_seq": pub.first_seq, "last_ts": pub.last_ts,
            "next_chunk": pub.next_chunk,
            "durable": self._word(OFF_DURABLE), "durable_segs": self._word(OFF_DURABLE_SEGS),
            "ck_seq": self._word(OFF_CK_SEQ), "flushes": self._word(OFF_FLUSHES),
            "sym_count": self._word(OFF_SYM_COUNT), "out_of_order": self._word(OFF_OUT_OF_ORDER),
            "writer_pid": self._word(OFF_WRITER_PID), "state": self._word(OFF_STATE),
            "live_gen": self._word(OFF_LIVE_GEN),
        }

    def live_dir(self):
        """The live directory recorded in ctl, or None."""
        n = int.from_bytes(bytes(self._ctl[OFF_LIVE_DIR:OFF_LIVE_DIR + 4]), "little")
        if n == 0 or n > 1020:
            return None
        d = os.fsdecode(bytes(self._ctl[OFF_LIVE_DIR + 4:OFF_LIVE_DIR + 4 + n]))
        return os.path.join(self.dir, d)  # an absolute path stays as it is

    # -- symbol dictionary (§5)

    def symbols(self):
        """All published symbol names (bytes), indexed by id."""
        count = self._word(OFF_SYM_COUNT)  # symCount first: symBytes covers its entries
        limit = self._word(OFF_SYM_BYTES)
        if len(self._sym_names) >= count:
            return self._sym_names[:count]
        p = self._sym_path
        if self._sym_map is None or len(self._sym_map) < limit:
            self._sym_map = _map(p)
            self._check_file_header(self._sym_map, p, b"TICKSYM\0")
        m = self._sym_map
        if len(m) < limit:
            raise CorruptError(p, len(m), f"file is {len(m)} bytes, ctl symBytes is {limit}")
        off = self._sym_off
        while len(self._sym_names) < count and off < limit:
            sym_id = len(self._sym_names)
            e = bytes(m[off:off + 16])
            name_len, check, dir_chunk = _u32(e, 0), _u32(e, 4), _u64(e, 8)
            if name_len > 4096 or off + 16 + name_len > limit:
                raise CorruptError(p, off, f"symbol {sym_id}: name length {name_len}")
            name = bytes(m[off + 16:off + 16 + name_len])
            want = crc32c(sym_id.to_bytes(4, "little") + dir_chunk.to_bytes(8, "little") + name)
            if check != want:
                raise CorruptError(p, off, f"symbol {sym_id}: check 0x{check:08x}, want 0x{want:08x}")
            self._sym_names.append(name)
            off += 16 + (name_len + 7) // 8 * 8
        self._sym_off = off
        if len(self._sym_names) < count:
            raise CorruptError(p, off, f"{len(self._sym_names)} entries below symBytes {limit}, ctl symCount is {count}")
        return list(self._sym_names)

    def symbol_id(self, name):
        """The id of a symbol name (str or bytes), or None."""
        if isinstance(name, str):
            name = name.encode("utf-8")
        try:
            return self.symbols().index(name)
        except ValueError:
            return None

    # -- segments (§3)

    def _check_file_header(self, m, path, magic):
        h = bytes(m[:36])
        if len(h) < 36 or h[0:8] != magic:
            raise CorruptError(path, 0, f"magic {h[0:8]!r}, want {magic!r}")
        if _u32(h, 8) != VERSION:
            raise VersionError(f"tickdb: {path}: format version {_u32(h, 8)}, this reader knows {VERSION}")
        if h[16:32] != self.table_id:
            raise CorruptError(path, 16, "table id differs from ctl's")
        got, want = _u32(h, 32), crc32c(h[:32])
        if got != want:
            raise CorruptError(path, 32, f"header check 0x{got:08x}, want 0x{want:08x}")

    def _seg_file_size(self):
        return BLOCK + (self.rows_per_seg * self.row_size + BLOCK - 1) // BLOCK * BLOCK

    def _check_seg_header(self, m, path, magic, seg_no):
        size = self._seg_file_size()
        if len(m) < size:
            raise CorruptError(path, len(m), f"file is {len(m)} bytes, want {size}")
        h = bytes(m[:64])
        if h[0:8] != magic:
            raise CorruptError(path, 0, f"magic {h[0:8]!r}, want {magic!r}")
        if _u32(h, 8) != VERSION:
            raise VersionError(f"tickdb: {path}: format version {_u32(h, 8)}, this reader knows {VERSION}")
        got, want = _u32(h, 56), crc32c(h[:56])
        if got != want:
            raise CorruptError(path, 56, f"header check 0x{got:08x}, want 0x{want:08x}")
        for off, what, v, w in ((12, "rowSize", _u32(h, 12), self.row_size),
                                (32, "segNo", _u64(h, 32), seg_no),
                                (40, "baseSeq", _u64(h, 40), seg_no * self.rows_per_seg),
                                (48, "rowsPerSeg", _u64(h, 48), self.rows_per_seg)):
            if v != w:
                raise CorruptError(path, off, f"{what} {v}, want {w}")
        if h[16:32] != self.table_id:
            raise CorruptError(path, 16, "table id differs from ctl's")

    def _compressed(self, n):
        """Refuse segment n if compaction rewrote it into a compressed file
        (seg-N.zdat, docs/FORMAT.md §10: format version 1 in seq order, 2
        clustered by symbol): this reader decodes raw segments only."""
        if n >= self._word(OFF_CMP_SEGS):
            return
        path = os.path.join(self.dir, f"seg-{n:010d}.zdat")
        try:
            with open(path, "rb") as f:
                h = f.read(12)
        except FileNotFoundError:
            return  # retention deleted it meanwhile: the raw lookup reports it
        v = _u32(h, 8) if len(h) == 12 and h[0:8] == b"TICKZSG\0" else None
        raise VersionError(
            f"tickdb: {path}: compressed segment, format version {v}; this reader knows only raw segments "
            f"(format version {VERSION}): read the table with tickdb (tickdb export), or before compaction")

    def _durable_rows(self, n, a, b):
        """Rows [a, b) of segment n, copied from its durable file and verified."""
        self._compressed(n)
        path = os.path.join(self.dir, f"seg-{n:010d}.dat")
        m = _map(path)
        self._check_seg_header(m, path, b"TICKSEG\0", n)
        off = BLOCK + (a - (n << self.seg_shift)) * self.row_size
        buf = np.array(m[off:off + (b - a) * self.row_size])
        verify_rows(buf, self.row_size, a, path, off)
        return buf

    def _live_rows(self, n, a, b, slots):
        """Rows [a, b) of segment n from its live slot, or None if the slot
        does not hold segment n (then the durable file must be used)."""
        s = n % self.live_slots
        e = OFF_SLOTS + 16 * s
        gen = self._word(e)
        if gen == 0 or self._word(e + 8) != n or self._word(e) != gen:
            return None
        if s not in slots:
            d = self.live_dir()
            path = d and os.path.join(d, f"slot-{s:02d}.live")
            try:
                slots[s] = (path, _map(path)) if path else None
            except (OSError, ValueError):
                slots[s] = None
        if slots[s] is None:
            return None
        path, m = slots[s]
        if len(m) < 72 or int(m[64:72].view("<u8")[0]) != gen:
            return None
        self._check_seg_header(m, path, b"TICKLIV\0", n)
        # liveFrom (@72): rows of the segment below it are not in the slot
        # (a reopened writer copied in only the block it appends to); they
        # are durable and come from the durable file.
        live_from = (n << self.seg_shift) + int(m[72:80].view("<u8")[0])
        low = None
        if a < live_from:
            low = self._durable_rows(n, a, min(b, live_from))
            a = min(b, live_from)
        off = BLOCK + (a - (n << self.seg_shift)) * self.row_size
        buf = np.array(m[off:off + (b - a) * self.row_size])
        if self._word(e) != gen:
            return None  # the slot moved on to a newer segment while we copied
        verify_rows(buf, self.row_size, a, path, off)
        return buf if low is None else np.concatenate([low, buf])

    def _live_usable(self):
        """Live slots belong to this boot (after a restart only durable files count, §9)."""
        stored = bytes(self._ctl[OFF_BOOT_ID:OFF_BOOT_ID + 16])
        return stored == _boot_id()

    def read(self, partial=False):
        """A Snapshot of every published row, [firstSeq, visible).

        A segment comes from its live slot when the slot holds it (a hot
        segment, sealed and durable, stays there until the slot is reused),
        else from its durable file: whole below durableSegs, otherwise for
        rows below durable. If some published rows can only be in a
        live slot that is gone, raises UnavailableError, or with partial=True
        returns the rows before them and counts the rest in .unavailable.
        """
        pub = self.published()
        rs, shift = self.row_size, self.seg_shift
        out = np.empty((pub.visible - pub.first_seq) * rs, dtype=np.uint8)
        live = self._live_usable()
        slots = {}
        seq = pub.first_seq
        while seq < pub.visible:
            n = seq >> shift
            end = min(pub.visible, (n + 1) << shift)
            buf = None
            if live:
                buf = self._live_rows(n, seq, end, slots)
            if buf is None:
                # No live copy: load durableSegs/durable now, after the slot
                # check, so a slot that was reassigned counts as durable.
                if n >= self._word(OFF_DURABLE_SEGS):
                    durable = self._word(OFF_DURABLE)
                    if durable < end:
                        if not partial:
                            raise UnavailableError(max(seq, durable), pub.visible)
                        if durable > seq:
                            i = (seq - pub.first_seq) * rs
                            out[i:i + (durable - seq) * rs] = self._durable_rows(n, seq, durable)
                        seq = max(seq, durable)
                        break
                buf = self._durable_rows(n, seq, end)
            i = (seq - pub.first_seq) * rs
            out[i:i + len(buf)] = buf
            seq = end
        rows = out[:(seq - pub.first_seq) * rs].view(self.dtype)
        syms = self.symbols()  # loaded after the rows: covers every id they name
        return Snapshot(rows=rows, first_seq=pub.first_seq, visible=pub.visible, last_ts=pub.last_ts,
                        durable=self._word(OFF_DURABLE), durable_segs=self._word(OFF_DURABLE_SEGS),
                        symbols=syms, unavailable=pub.visible - seq)

    def close(self):
        """Drop the mappings (numpy unmaps when the arrays are collected)."""
        self._ctl = self._words = self._sym_map = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_table(db, table):
    """Open DB/TABLE read-only."""
    return Table(db, table)


def read_table(db, table, partial=False):
    """Open DB/TABLE, read a Snapshot of its published rows, close it."""
    with open_table(db, table) as t:
        return t.read(partial=partial)


# ---------------------------------------------------------------- CLI


def _json_value(col, v, syms):
    if col.type == TYPE_SYM:
        return syms[v]
    if col.type == TYPE_F64 and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")
    return v


def main(argv=None):
    ap = argparse.ArgumentParser(description="Print a tickdb table's published rows (read-only).")
    ap.add_argument("db")
    ap.add_argument("table")
    ap.add_argument("--sym", help="only rows whose first sym column is NAME")
    ap.add_argument("--head", type=int, default=None, metavar="N", help="print at most N rows")
    ap.add_argument("--format", choices=("text", "json"), default="text",
                    help="json: a summary object, then one object per row (JSON Lines); "
                         "non-finite f64 values are the strings NaN, +Inf, -Inf")
    ap.add_argument("--partial", action="store_true",
                    help="print the readable rows when some published rows are unavailable")
    a = ap.parse_args(argv)

    try:
        with open_table(a.db, a.table) as t:
            c = t.counters()  # before the rows: durable <= the rows read
            snap = t.read(partial=a.partial)
    except TickDBError as e:
        print(e, file=sys.stderr)
        return 1
    rows, seqs = snap.rows, snap.seqs()
    syms = [s.decode("utf-8", "backslashreplace") for s in snap.symbols]
    if a.sym is not None:
        symcols = [col for col in t.columns if col.type == TYPE_SYM]
        want = a.sym.encode("utf-8")
        sid = snap.symbols.index(want) if want in snap.symbols else None
        mask = np.zeros(len(rows), bool) if sid is None or not symcols else rows[symcols[0].name] == sid
        rows, seqs = rows[mask], seqs[mask]
    if a.head is not None:
        rows, seqs = rows[:a.head], seqs[:a.head]

    out = sys.stdout
    if a.format == "json":
        summary = {"table": a.table, "count": len(snap.rows), "matched": len(rows),
                   "unavailable": snap.unavailable, "symbols": len(syms)}
        summary.update(c)
        summary.update(first_seq=snap.first_seq, visible=snap.visible, last_ts=snap.last_ts)
        out.write(json.dumps(summary) + "\n")
        cols = t.columns
        values = [rows[col.name].tolist() for col in cols]
        for i, seq in enumerate(seqs.tolist()):
            obj = {"seq": seq}
            for col, vals in zip(cols, values):
                obj[col.name] = _json_value(col, vals[i], syms)
            out.write(json.dumps(obj, allow_nan=False) + "\n")
        return 0

    out.write(f"table {a.table}: {len(snap.rows)} rows, seq [{snap.first_seq}, {snap.visible}), "
              f"durable {c['durable']} ({c['durable_segs']} whole segments), symbols {len(syms)}, "
              f"writer {'pid ' + str(c['writer_pid']) if c['state'] else 'closed'}\n")
    if snap.unavailable:
        out.write(f"unavailable: {snap.unavailable} published rows (live copy gone, not durable)\n")
    if a.sym is not None:
        out.write(f"sym {a.sym!r}: {len(rows)} rows shown\n")
    names = ["seq"] + [col.name for col in t.columns]
    out.write("\t".join(names) + "\n")
    values = [rows[col.name].tolist() for col in t.columns]
    for i, seq in enumerate(seqs.tolist()):
        cells = [str(seq)]
        for col, vals in zip(t.columns, values):
            v = vals[i]
            cells.append(syms[v] if col.type == TYPE_SYM else repr(v) if col.type == TYPE_F64 else str(v))
        out.write("\t".join(cells) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
