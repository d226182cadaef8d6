#!/usr/bin/env python3
"""Read a tickdb table with numpy.memmap, from docs/FORMAT.md alone.

This reader shows that the on-disk format is readable from another language.
It works on a closed table and on a live one (a writer appending in another
process): it reads the published words of ``ctl`` under the seqlock, takes
each segment's rows from its live slot or its durable file as FORMAT.md §4
prescribes, checks every header, index and dictionary entry's CRC32C, and
returns the rows as numpy columns (to_numpy), a pandas DataFrame
(to_pandas) or a numpy structured array whose dtype is built from the
column offsets stored in the schema (rows). Rows of durable raw segments
are views of the mapped files; their check words are verified on request
(read(verify=True), Snapshot.verify(); live-slot rows always).

A table whose columns grew (§15: ctl feature bit 3, the ``schema`` file)
holds segments of several row sizes; each is read in its own layout (the
schema's first k columns) and its rows are returned relaid into the
current schema, as tickdb's ``store.Relayout`` does: the columns a row was
written without read as their missing value (NaN, 0, False, the sym id
``NO_SYM``, named "").

Compacted segments (``seg-N.zdat``, §10: format version 1 in seq order,
version 2 clustered by symbol) are decoded with the column codecs of §11
(numpy, plus the ``zstandard`` module for the zstd frames) into the raw
segment's rows, check words recomputed, after every CRC32C and structural
check the format defines.

Like tickdb's own readers it only opens files read-only and never writes,
creates or locks anything.

Library use::

    import tickdb_reader as tr
    t = tr.open_table("tickdata", "trades")
    snap = t.read()                 # a consistent snapshot of published rows
    snap.column("price")            # numpy columns
    df = snap.to_pandas()           # ts datetime64[ns, UTC], sym Categorical
    t.read(from_ts, to_ts, syms=["AAPL"], columns=["ts", "price"])
    snap.names("sym")               # sym ids -> names (str)
    t.close()

Command line::

    python3 tickdb_reader.py DB TABLE [--sym NAME] [--from T1] [--to T2] [--head N]
                             [--format text|json] [--ts rfc3339|ns]

Section numbers (§) refer to docs/FORMAT.md.
"""

import argparse
import bisect
import json
import math
import os
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

try:
    import zstandard  # Debian: python3-zstandard; needed for compressed segments only
except ImportError:
    zstandard = None

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


class _SchemaGrew(Exception):
    """The table's schema gained columns during a read (Table.read starts over)."""


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


_CRC_NP = np.array(_CRC_TABLE, dtype=np.uint32)
_CRC_SLICE = [_CRC_NP]  # slicing-by-4 tables: entry i advanced over 0, 1, 2, 3 more zero bytes
for _ in range(3):
    _CRC_SLICE.append((_CRC_SLICE[-1] >> np.uint32(8)) ^ _CRC_NP[_CRC_SLICE[-1] & 0xFF])
_CRC_CHUNK = 64
_CRC_SHIFT = []  # four 256-entry tables: a register advanced over _CRC_CHUNK zero bytes


def _crc_shift_tables():
    """Tables U0..U3 with U0[r & 0xFF] ^ U1[r >> 8 & 0xFF] ^ ... = the raw
    register r advanced over _CRC_CHUNK zero bytes (a linear map)."""
    if not _CRC_SHIFT:
        basis = []
        for i in range(32):
            r = 1 << i
            for _ in range(_CRC_CHUNK):
                r = _CRC_TABLE[r & 0xFF] ^ (r >> 8)
            basis.append(r)
        basis = np.array(basis, np.uint32)
        bits = ((np.arange(256)[:, None] >> np.arange(8)) & 1).astype(bool)
        _CRC_SHIFT.extend(np.bitwise_xor.reduce(np.where(bits, basis[8 * k:8 * k + 8], np.uint32(0)), axis=1)
                          .astype(np.uint32) for k in range(4))
    return _CRC_SHIFT


def crc32c_many(bufs):
    """CRC32C of each of bufs (bytes, at least 4 long), vectorised with numpy.

    The CRC register is linear: the initial 0xFFFFFFFF is the same as the
    first 4 bytes flipped and a zero register, leading zero bytes leave a
    zero register zero, so each buffer is zero-padded at the front to whole
    64-byte chunks, every chunk of every buffer is run in lockstep from a
    zero register, and each buffer's chunk registers are folded (register
    advanced over 64 zero bytes, by table, XOR the next chunk's)."""
    if not bufs:
        return []
    C = _CRC_CHUNK
    parts, nchunks = [], []
    for b in bufs:
        pad = -len(b) % C
        parts += [bytes(pad), bytes(x ^ 0xFF for x in b[:4]), b[4:]]
        nchunks.append((len(b) + pad) // C)
    m = np.frombuffer(b"".join(parts), "<u4").reshape(-1, C // 4)
    words = np.ascontiguousarray(m.T)  # words[j]: word j of every chunk
    reg = np.zeros(len(m), np.uint32)
    t0, t1, t2, t3 = _CRC_SLICE
    for w in words:  # slicing by 4: a word at a time
        reg ^= w
        reg = t3[reg & 0xFF] ^ t2[(reg >> np.uint32(8)) & 0xFF] ^ t1[(reg >> np.uint32(16)) & 0xFF] ^ t0[reg >> np.uint32(24)]
    nchunks = np.array(nchunks)
    width = int(nchunks.max())
    folded = np.zeros((len(bufs), width), np.uint32)  # right-aligned: leading zero chunks
    rows = np.repeat(np.arange(len(bufs)), nchunks)
    first = np.cumsum(nchunks) - nchunks
    cols = np.arange(len(m)) - np.repeat(first, nchunks) + np.repeat(width - nchunks, nchunks)
    folded[rows, cols] = reg
    u0, u1, u2, u3 = _crc_shift_tables()
    acc = np.zeros(len(bufs), np.uint32)
    for i in range(width):
        acc = (u0[acc & 0xFF] ^ u1[(acc >> np.uint32(8)) & 0xFF] ^ u2[(acc >> np.uint32(16)) & 0xFF]
               ^ u3[acc >> np.uint32(24)] ^ folded[:, i])
    return [int(x) ^ 0xFFFFFFFF for x in acc]


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
NO_SYM = 0xFFFFFFFF  # the sym id of a sym column added after the row was written (§15): ""
SCHEMA_MAGIC = b"TICKSCM\0"
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
FEAT_COLUMNS = 1 << 3  # columns added to the table: the schema file, segments of several row sizes (§15)
KNOWN_FEATURES = 0b1111  # late rows (read in arrival order), postings floor, clustered compressed segments, columns
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


# ---------------------------------------------------------------- column codecs (§11)

_U64 = np.uint64
_POW10 = [10.0 ** k for k in range(10)]  # every entry exact in float64
_XOR_MASK = np.array([(1 << (8 * c)) - 1 for c in range(9)], dtype=np.uint64)


class _CodecError(Exception):
    """A codec block that does not decode (turned into a CorruptError naming the frame)."""


def _uvarint(a, p):
    """One varint at a[p:] (unsigned LEB128, at most 10 bytes, shortest form): (value, next offset)."""
    x = 0
    for i in range(10):
        if p + i >= len(a):
            raise _CodecError(f"truncated varint at {p}")
        c = int(a[p + i])
        if c < 0x80:
            if i > 0 and c == 0:
                raise _CodecError(f"varint at {p} not in shortest form")
            if i == 9 and c > 1:
                raise _CodecError(f"varint at {p} overflows 64 bits")
            return x | c << (7 * i), p + i + 1
        x |= (c & 0x7F) << (7 * i)
    raise _CodecError(f"varint at {p} longer than 10 bytes")


def _varints(a, p, n):
    """n varints from a[p:] (a: uint8 array), vectorised: (uint64 array, next offset)."""
    if n == 0:
        return np.zeros(0, np.uint64), p
    tail = a[p:]
    ends = np.flatnonzero(tail < 0x80)
    if len(ends) < n:
        raise _CodecError(f"truncated: {len(ends)} varints for {n} values")
    ends = ends[:n]
    starts = np.empty(n, np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    lens = ends - starts + 1
    last = tail[ends]
    if lens.max() > 10 or np.any((lens > 1) & (last == 0)) or np.any((lens == 10) & (last > 1)):
        i = int(np.flatnonzero((lens > 10) | ((lens > 1) & (last == 0)) | ((lens == 10) & (last > 1)))[0])
        raise _CodecError(f"bad varint at {p + int(starts[i])}")
    total = int(ends[-1]) + 1
    # An (n, L) matrix of each varint's bytes, L the longest (1 or 2 for
    # most columns): byte j holds bits 7j.. of the value.
    width = int(lens.max())
    j = np.arange(width)
    g = np.append(tail[:total], np.zeros(width, np.uint8))[starts[:, None] + j].astype(np.uint64) & _U64(0x7F)
    g[j >= lens[:, None]] = 0
    return np.bitwise_or.reduce(g << (_U64(7) * j.astype(np.uint64)), axis=1), p + total


def _unzigzag(u):
    """zz⁻¹ on uint64 (the int64 result's bits): (u >> 1) XOR -(u & 1).

    (numpy's integer array arithmetic wraps modulo 2^64 without a warning,
    as the format wants; only scalar arithmetic would warn.)"""
    sign = u & _U64(1)
    np.negative(sign, out=sign)
    out = u >> _U64(1)
    np.bitwise_xor(out, sign, out=out)
    return out


def _zigzag(u):
    """zz(x) = (x << 1) XOR (x >> 63) (arithmetic shift) on an int64's bits, as uint64."""
    return (u << _U64(1)) ^ (u.view(np.int64) >> np.int64(63)).view(np.uint64)


def _keyed(v, key, accumulate):
    """Running accumulate (np.cumsum or np.bitwise_xor.accumulate, uint64,
    wrapping) of v per key value (the previous value of the same key), or over
    all of v when key is None. Both operations are invertible, so a group's
    running values are the global ones less the value before the group."""
    if key is None or len(v) == 0:
        return accumulate(v, dtype=np.uint64)
    order = np.argsort(key, kind="stable")
    ks = key[order]
    acc = accumulate(v[order], dtype=np.uint64)
    starts = np.flatnonzero(np.concatenate(([True], ks[1:] != ks[:-1])))
    before = np.zeros(len(starts), np.uint64)
    before[1:] = acc[starts[1:] - 1]
    before = np.repeat(before, np.diff(np.append(starts, len(v))))
    acc = acc - before if accumulate is np.cumsum else acc ^ before
    out = np.empty_like(acc)
    out[order] = acc
    return out


def _block_header(a, n, lo, hi, codec):
    """A codec block's tag (one of lo..hi) and value count (must be n): (tag, offset after)."""
    if len(a) == 0:
        raise _CodecError(f"{codec}: empty block")
    tag = int(a[0])
    if not lo <= tag <= hi:
        raise _CodecError(f"{codec}: tag {tag:#04x} is not a {codec} block")
    cnt, p = _uvarint(a, 1)
    if cnt != n:
        raise _CodecError(f"{codec}: block holds {cnt} values, want {n}")
    return tag, p


def decode_ts(a, n):
    """A ts block (tags 0x01 delta-of-delta, 0x02 delta) of n values: (int64 array, bytes used)."""
    tag, p = _block_header(a, n, 0x01, 0x02, "ts")
    if n == 0:
        return np.zeros(0, np.int64), p
    if len(a) - p < 8 + n - 1:
        raise _CodecError(f"ts: truncated: {len(a) - p} bytes for {n} values")
    first = _U64(int.from_bytes(bytes(a[p:p + 8]), "little"))
    x, p = _varints(a, p + 8, n - 1)
    d = _unzigzag(x)
    if tag == 0x01:
        d = np.cumsum(d, dtype=np.uint64)
    t = np.concatenate(([first], first + np.cumsum(d, dtype=np.uint64)))
    return t.view(np.int64), p


def decode_u32(a, n):
    """A u32 block (tag 0x10, bit-packed) of n values: (uint32 array, bytes used)."""
    _, p = _block_header(a, n, 0x10, 0x10, "u32")
    if p >= len(a) or a[p] > 32:
        raise _CodecError("u32: bad bit width")
    w = int(a[p])
    p += 1
    if w and n > (len(a) - p) * 8 // w:
        raise _CodecError(f"u32: truncated: {len(a) - p} bytes for {n} values of {w} bits")
    size = (n * w + 7) // 8
    body = a[p:p + size]
    r = n * w % 8
    if r and int(body[size - 1]) >> r:
        raise _CodecError("u32: nonzero padding bits")
    if w == 0:
        return np.zeros(n, np.uint32), p + size
    bits = np.unpackbits(body, bitorder="little")[:n * w].reshape(n, w).astype(np.uint64)
    v = (bits << np.arange(w, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)
    return v.astype(np.uint32), p + size


def decode_bool(a, n):
    """A bool block (tag 0x18, a bit a value) of n values: (bool array, bytes used)."""
    _, p = _block_header(a, n, 0x18, 0x18, "bool")
    size = (n + 7) // 8
    if len(a) - p < size:
        raise _CodecError(f"bool: truncated: {len(a) - p} bytes for {n} values")
    body = a[p:p + size]
    if n % 8 and int(body[size - 1]) >> (n % 8):
        raise _CodecError("bool: nonzero padding bits")
    return np.unpackbits(body, bitorder="little")[:n].astype(bool), p + size


def _decode_ints(a, p, n, delta, key):
    """The integer body of the i64 codec and the f64 decimal mode at a[p:]:
    g, then n zig-zag varints q; the values q*g (plain) or their running sums
    per key (delta), as uint64 bits (wrapping). Returns (values, offset after)."""
    g, p = _uvarint(a, p)
    if g == 0 or g > 1 << 63:
        raise _CodecError("bad divisor")
    if len(a) - p < n:
        raise _CodecError(f"truncated: {len(a) - p} bytes for {n} values")
    x, p = _varints(a, p, n)
    v = _unzigzag(x) * _U64(g)
    if delta:
        v = _keyed(v, key, np.cumsum)
    return v, p


def decode_i64(a, n, key=None):
    """An i64 block (tags 0x20 plain, 0x21 delta per key) of n values: (int64 array, bytes used)."""
    tag, p = _block_header(a, n, 0x20, 0x21, "i64")
    if len(a) - p < n:
        raise _CodecError(f"i64: truncated: {len(a) - p} bytes for {n} values")
    v, p = _decode_ints(a, p, n, tag == 0x21, key)
    return v.view(np.int64), p


def decode_f64(a, n, key=None):
    """An f64 block (0x30/0x31 decimal plain/delta, 0x32 XOR) of n values: (float64 array, bytes used)."""
    tag, p = _block_header(a, n, 0x30, 0x32, "f64")
    if len(a) - p < n:
        raise _CodecError(f"f64: truncated: {len(a) - p} bytes for {n} values")
    if tag != 0x32:
        if p >= len(a) or a[p] > 9:
            raise _CodecError("f64: bad decimal scale")
        k = int(a[p])
        m, p = _decode_ints(a, p + 1, n, tag == 0x31, key)
        # float64(m) / 10^k, IEEE (the encoder checked it bit for bit).
        return m.view(np.int64).astype(np.float64) / _POW10[k], p
    # XOR: a control byte c = cnt<<4 | tz, then cnt payload bytes. Value
    # i's control byte is at next^i(0), next(q) = q + 1 + (byte q >> 4):
    # found for all i at once by pointer doubling (next, next², next⁴, ...).
    b = bytes(a[p:])
    if n == 0:
        return np.zeros(0, np.float64), p
    body = np.frombuffer(b, np.uint8)
    end = len(b)
    jump = np.minimum(np.arange(end + 1) + 1 + np.append(body >> 4, 0), end)  # end: a sink
    pos = np.zeros(n, np.int64)
    i = np.arange(n)
    bit = 1
    while bit < n:
        pos = np.where(i & bit, jump[pos], pos)
        jump = jump[jump]
        bit <<= 1
    if pos[-1] >= end:
        raise _CodecError(f"f64: bad xor control byte for value {int(np.argmax(pos >= end))}")
    c = body[pos].astype(np.int64)
    cnt, tz = c >> 4, c & 15
    q = int(pos[-1]) + 1 + int(cnt[-1])
    if q > end or np.any((c != 0) & ((cnt == 0) | (cnt + tz > 8))):
        bad = (c != 0) & ((cnt == 0) | (cnt + tz > 8))
        raise _CodecError(f"f64: bad xor control byte for value {int(np.argmax(bad)) if bad.any() else n - 1}")
    padded = np.frombuffer(b + bytes(8), np.uint8)
    w = np.ascontiguousarray(padded[(pos + 1)[:, None] + np.arange(8)]).view("<u8")[:, 0] & _XOR_MASK[cnt]
    nz = cnt > 0
    top = w >> (_U64(8) * np.maximum(cnt - 1, 0).astype(np.uint64))
    if np.any(nz & (((w & _U64(0xFF)) == 0) | (top == 0))):
        i = int(np.flatnonzero(nz & (((w & _U64(0xFF)) == 0) | (top == 0)))[0])
        raise _CodecError(f"f64: bad xor control byte for value {i}")
    x = w << (_U64(8) * tz.astype(np.uint64))
    return _keyed(x, key, np.bitwise_xor.accumulate).view(np.float64), p + q


# ---------------------------------------------------------------- many blocks at once (§11)
#
# Table.read's fast path decodes one column of many data blocks in one set
# of numpy operations: each block's header is parsed in Python (a few
# bytes), the bodies are laid end to end, and the varints, zig-zag, prefix
# sums (restarting at each block) and bit unpacking run once over all of
# them. The single-block decoders above stay the reference (and the
# verified path's).


def _nzstarts(counts):
    """The first index of each block of counts[i] values that has any."""
    counts = np.asarray(counts, np.int64)
    return (np.cumsum(counts) - counts)[counts > 0]


def _segsum(v, counts):
    """Running sums (uint64, wrapping) of v restarting at each block of
    counts[i] values: one cumsum over v with each block's first value less
    the previous block's sum (no per-row expansion of block constants)."""
    v = np.asarray(v, np.uint64)
    st = _nzstarts(counts)
    if len(st) <= 1:
        return np.cumsum(v, dtype=np.uint64)
    sums = np.add.reduceat(v, st, dtype=np.uint64)
    w = v.copy()
    w[st[1:]] -= sums[:-1]
    return np.cumsum(w, dtype=np.uint64)


def _expand(vals, counts):
    """Each block's value vals[i] repeated counts[i] times, as uint64 (a
    cumsum of the steps between blocks: cheaper than numpy.repeat)."""
    counts = np.asarray(counts, np.int64)
    vals = np.asarray(vals).astype(np.uint64)[counts > 0]
    st = _nzstarts(counts)
    out = np.zeros(int(counts.sum()), np.uint64)
    if len(st):
        out[st] = np.diff(vals, prepend=_U64(0))
    return np.cumsum(out, dtype=np.uint64)


def _varints_blocks(buf, counts, lens):
    """The varints of many block bodies laid end to end in buf (uint8):
    body i is lens[i] bytes holding exactly counts[i] varints. A uint64 array."""
    total = int(counts.sum())
    if total == 0:
        if len(buf):
            raise _CodecError(f"{len(buf)} bytes after the values")
        return np.zeros(0, np.uint64)
    if total == len(buf):  # as many values as bytes: every varint one byte, or an error
        if buf.max() >= 0x80:
            raise _CodecError(f"{int(np.count_nonzero(buf < 0x80))} varints for {total} values")
        if np.any(np.cumsum(lens) != np.cumsum(counts)):
            raise _CodecError("a block's values do not end where its bytes do")
        return buf.astype(np.uint64)
    ends = np.flatnonzero(buf < 0x80)
    if len(ends) != total:
        raise _CodecError(f"{len(ends)} varints for {total} values")
    nz = counts > 0
    bad = ends[np.cumsum(counts)[nz] - 1] != np.cumsum(lens)[nz] - 1
    if bad.any() or np.any(lens[~nz]):
        raise _CodecError(f"block {int(np.flatnonzero(nz)[np.argmax(bad)]) if bad.any() else 0}: "
                          f"its values do not end where its bytes do")
    starts = np.empty(total, np.int64)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    v = (buf[starts] & 0x7F).astype(np.uint64)
    multi = np.flatnonzero(ends != starts)  # the varints of two bytes or more
    ml, ms = ends[multi] - starts[multi] + 1, starts[multi]
    last = buf[ends[multi]]
    bad = (ml > 10) | (last == 0) | ((ml == 10) & (last > 1))
    if bad.any():
        raise _CodecError(f"bad varint at byte {int(ms[np.argmax(bad)])} of the bodies")
    acc = v[multi]
    j = 1
    while len(multi):  # byte j of the varints longer than j bytes
        acc |= (buf[ms + j] & 0x7F).astype(np.uint64) << _U64(7 * j)
        j += 1
        more = ml > j
        if not more.all():
            v[multi] = acc
            multi, ml, ms, acc = multi[more], ml[more], ms[more], acc[more]
    return v


def _join(bodies):
    """Bodies (bytes) end to end: (uint8 array, lengths)."""
    return np.frombuffer(b"".join(bodies), np.uint8), np.array([len(b) for b in bodies], np.int64)


def batch_ts(raws, counts):
    """ts blocks (0x01/0x02) of counts[i] values each: one int64 array."""
    firsts, bodies, dod = [], [], []
    for raw, n in zip(raws, counts):
        tag, p = _block_header(raw, n, 0x01, 0x02, "ts")
        if n == 0:
            if p != len(raw):
                raise _CodecError(f"ts: {len(raw) - p} bytes after the values")
            bodies.append(b"")
            continue
        if len(raw) - p < 8 + n - 1:
            raise _CodecError(f"ts: truncated: {len(raw) - p} bytes for {n} values")
        firsts.append(int.from_bytes(raw[p:p + 8], "little"))
        bodies.append(b"\0" + raw[p + 8:])  # a zero delta for the block's first value
        dod.append(tag == 0x01)
    counts = np.asarray(counts, np.int64)
    buf, lens = _join(bodies)
    e = _unzigzag(_varints_blocks(buf, counts, lens))
    if any(dod):  # deltas from delta-of-deltas (d0 = 0)
        d = _segsum(e, counts)
        e = d if all(dod) else np.where(_expand(dod, counts) > 0, d, e)
    # ts = first + running deltas: one cumsum, each block's first value
    # replaced by its first ts less the previous block's last ts.
    st = _nzstarts(counts)
    c = np.cumsum(e, dtype=np.uint64)
    f = np.array(firsts, np.uint64)
    last = f + (c[np.append(st[1:], len(c)) - 1] - c[st] + e[st])  # each block's last ts
    e = e.copy()
    e[st] = f - np.concatenate(([_U64(0)], last[:-1]))
    return np.cumsum(e, dtype=np.uint64).view(np.int64)


def batch_u32(raws, counts):
    """u32 blocks (0x10, bit-packed) of counts[i] values each: one uint32 array."""
    ws, bodies = [], []
    for raw, n in zip(raws, counts):
        _, p = _block_header(raw, n, 0x10, 0x10, "u32")
        if p >= len(raw) or raw[p] > 32:
            raise _CodecError("u32: bad bit width")
        w = raw[p]
        size = (n * w + 7) // 8
        if len(raw) != p + 1 + size:
            raise _CodecError(f"u32: {len(raw) - p - 1} bytes for {n} values of {w} bits")
        if n * w % 8 and raw[-1] >> (n * w % 8):
            raise _CodecError("u32: nonzero padding bits")
        ws.append(w)
        bodies.append(raw[p + 1:])
    counts = np.asarray(counts, np.int64)
    buf, lens = _join(bodies + [bytes(8)])
    n = int(counts.sum())
    starts = np.cumsum(counts) - counts
    w = _expand(ws, counts).astype(np.int64)
    bit = (np.arange(n) - _expand(starts, counts).astype(np.int64)) * w
    at = _expand(np.cumsum(lens[:-1]) - lens[:-1], counts).astype(np.int64) + (bit >> 3)
    v = np.zeros(n, np.uint64)
    for j in range(5):  # w <= 32 bits from bit (at*8 + bit&7): within 5 bytes
        v |= buf[at + j].astype(np.uint64) << _U64(8 * j)
    v = (v >> (bit & 7).astype(np.uint64)) & ((np.uint64(1) << w.astype(np.uint64)) - _U64(1))
    return v.astype(np.uint32)


def batch_bool(raws, counts):
    """bool blocks (0x18) of counts[i] values each: one bool array."""
    bodies = []
    for raw, n in zip(raws, counts):
        _, p = _block_header(raw, n, 0x18, 0x18, "bool")
        if len(raw) != p + (n + 7) // 8:
            raise _CodecError(f"bool: {len(raw) - p} bytes for {n} values")
        if n % 8 and raw[-1] >> (n % 8):
            raise _CodecError("bool: nonzero padding bits")
        bodies.append(raw[p:])
    counts = np.asarray(counts, np.int64)
    buf, lens = _join(bodies)
    bits = np.unpackbits(buf, bitorder="little")
    i = np.arange(int(counts.sum())) + _expand((np.cumsum(lens) - lens) * 8 - (np.cumsum(counts) - counts), counts).view(np.int64)
    return bits[i].astype(bool)


def _batch_ints(raws, ps, counts, delta, key):
    """Integer bodies (g, then counts[i] zig-zag varints) at raws[i][ps[i]:]:
    q*g, or its running sums per key in the blocks where delta[i] (restarting
    at each block), as uint64 bits."""
    gs, bodies = [], []
    for raw, p, n in zip(raws, ps, counts):
        g, p = _uvarint(raw, p)
        if g == 0 or g > 1 << 63:
            raise _CodecError("bad divisor")
        gs.append(g)
        bodies.append(raw[p:])
    counts = np.asarray(counts, np.int64)
    buf, lens = _join(bodies)
    v = _unzigzag(_varints_blocks(buf, counts, lens))
    if any(g != 1 for g in gs):
        v = v * (_U64(gs[0]) if len(set(gs)) == 1 else _expand(gs, counts))
    if any(delta):
        if key is None:
            s = _segsum(v, counts)
        else:
            blk = _expand(np.arange(len(counts)), counts)
            s = _keyed(v, (blk << _U64(32)) | key.astype(np.uint64), np.cumsum)
        v = s if all(delta) else np.where(_expand(delta, counts) > 0, s, v)
    return v


def batch_i64(raws, counts, key=None):
    """i64 blocks (0x20/0x21) of counts[i] values each (delta keyed by key,
    the blocks' sym ids end to end, or by nothing): one int64 array."""
    ps, delta = [], []
    for raw, n in zip(raws, counts):
        tag, p = _block_header(raw, n, 0x20, 0x21, "i64")
        ps.append(p)
        delta.append(tag == 0x21)
    return _batch_ints(raws, ps, counts, delta, key).view(np.int64)


def batch_f64(raws, counts, key=None):
    """f64 blocks (0x30/0x31 decimal, 0x32 XOR) of counts[i] values each: one
    float64 array. Decimal blocks are decoded together; an XOR block on its
    own (decode_f64: its control bytes chain value to value)."""
    dec, ps, ks = [], [], []
    for i, (raw, n) in enumerate(zip(raws, counts)):
        tag, p = _block_header(raw, n, 0x30, 0x32, "f64")
        if tag != 0x32:
            if p >= len(raw) or raw[p] > 9:
                raise _CodecError("f64: bad decimal scale")
            dec.append((i, tag == 0x31))
            ps.append(p + 1)
            ks.append(raw[p])
    counts = np.asarray(counts, np.int64)
    starts = np.cumsum(counts) - counts
    out = np.empty(int(counts.sum()), np.float64)
    if dec:
        idx = [i for i, _ in dec]
        sub = counts[idx]
        at = slice(None) if len(idx) == len(raws) else np.concatenate([np.arange(starts[i], starts[i] + counts[i]) for i in idx])
        m = _batch_ints([raws[i] for i in idx], ps, sub, [d for _, d in dec], None if key is None else key[at])
        div = _POW10[ks[0]] if len(set(ks)) == 1 else np.array(_POW10)[_expand(ks, sub).astype(np.int64)]
        out[at] = m.view(np.int64).astype(np.float64) / div
    if len(dec) < len(raws):
        for i in sorted(set(range(len(raws))) - {i for i, _ in dec}):
            a = np.frombuffer(raws[i], np.uint8)
            s = slice(starts[i], starts[i] + counts[i])
            v, used = decode_f64(a, int(counts[i]), None if key is None else key[s])
            if used != len(a):
                raise _CodecError(f"f64: {len(a) - used} bytes after the values")
            out[s] = v
    return out


def _missing(col, n):
    """n missing values of a column a row was written without (§15)."""
    if col.type == TYPE_F64:
        return np.full(n, 0x7FF8000000000001, np.uint64).view(np.float64)
    if col.type == TYPE_SYM:
        return np.full(n, NO_SYM, np.uint32)
    return np.zeros(n, _TYPE_DTYPE[col.type])


# ---------------------------------------------------------------- compressed segments (§10)

ZMAGIC = b"TICKZSG\0"
_ZSEG_KEEP = 256  # parsed compressed segments a Table keeps (their file bytes: ~2 MB each for 512 Ki ticks)
ZBLOCK_ROWS = 4096
FLAG_LATE = 1  # cseg header flags word (offset 12): rows may go back in ts (§14)
KNOWN_ZFLAGS = FLAG_LATE


def _crcs(bufs):
    """CRC32C of each of bufs: vectorised (crc32c_many) when all are 4 bytes or longer."""
    if all(len(b) >= 4 for b in bufs):
        return crc32c_many(bufs)
    return [crc32c(b) for b in bufs]


def seal_rows(buf, row_size, seqs):
    """Write each row's check word (§2) for its sequence number: buf is a
    contiguous uint8 array of len(seqs) rows (check words overwritten)."""
    n = len(seqs)
    if n == 0:
        return
    words = buf.view("<u8").reshape(n, row_size // 8)
    buf.view("<u4").reshape(n, row_size // 4)[:, -1] = row_checks(words, seqs)


_ZSTD = threading.local()  # a decompressor per thread (one may not be used by two at once)


def _zframe(frame, limit):
    """The content of one zstd frame (content size at most limit, checksum
    verified by the library, no bytes after it)."""
    if zstandard is None:
        raise TickDBError("tickdb: compressed segments need the zstandard module "
                          "(Debian: apt-get install python3-zstandard)")
    if len(frame) == 0:
        raise _CodecError("zstd: empty input")
    try:
        size = zstandard.get_frame_parameters(frame).content_size
    except zstandard.ZstdError as e:
        raise _CodecError(f"zstd: bad frame header: {e}")
    if size > limit and size != zstandard.CONTENTSIZE_UNKNOWN:
        raise _CodecError(f"zstd: frame holds {size} bytes, max {limit}")
    dec = getattr(_ZSTD, "dec", None)
    if dec is None:
        dec = _ZSTD.dec = zstandard.ZstdDecompressor()
    d = dec.decompressobj()
    try:
        out = d.decompress(frame)
    except zstandard.ZstdError as e:
        raise _CodecError(f"zstd: decode: {e}")
    if not d.eof or d.unused_data or len(out) > limit:
        raise _CodecError("zstd: not exactly one frame")
    return np.frombuffer(out, np.uint8)


class _ZSeg:
    """One compressed segment file, checked against the table (§10, §10.1,
    §10.2) and decoded to the raw segment's rows: every column at its schema
    offset, padding zero, check words recomputed for their seq (§2). The
    rows are in the segment's layout: the table's first ncols columns (its
    header's, §15), cols, row_size and dtype."""

    def __init__(self, table, n, path):
        self.t, self.n, self.path = table, n, path
        self._v2 = None  # a version 2 file's rows, once decoded
        self._crc_ok = set()  # data blocks whose CRC32C was checked
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            self.ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            self.data = f.read()
        self._parse()

    def _corrupt(self, off, reason):
        return CorruptError(self.path, off, reason)

    def _parse(self):
        t, b, path = self.t, self.data, self.path
        size = len(b)
        if size < BLOCK + 4:
            raise self._corrupt(size, f"compressed segment is {size} bytes, shorter than a header and an index")
        if b[0:8] != ZMAGIC:
            raise self._corrupt(0, f"magic {b[0:8]!r}, want {ZMAGIC!r}")
        self.version = v = _u32(b, 8)
        if v not in (1, 2):
            raise VersionError(f"tickdb: {path}: compressed segment format version {v}, this reader knows 1 and 2")
        check = 152 if v == 1 else 200
        got, want = _u32(b, check), crc32c(b[:check])
        if got != want:
            raise self._corrupt(check, f"header check 0x{got:08x}, want 0x{want:08x}")
        flags = _u32(b, 12)
        if flags & ~KNOWN_ZFLAGS:
            raise VersionError(f"tickdb: {path}: compressed segment flags {flags:#x}, this reader knows "
                               f"{KNOWN_ZFLAGS:#x} (written by a newer tickdb)")
        self.late = bool(flags & FLAG_LATE)
        zero = b[check + 4:BLOCK]
        if zero.strip(b"\0"):
            raise self._corrupt(check + 4 + len(zero) - len(zero.lstrip(b"\0")), "nonzero byte in the header's zero area")
        R = t.rows_per_seg
        self.rows = rows = _u64(b, 48)
        # The segment's columns are the schema's first ncols (§15): its
        # layout, whose row size the header must give.
        ncols = _u32(b, 68)
        lay = t.layout_of_ncols(ncols)
        if lay is None:
            # Compressed after a column was added that the table's reader
            # did not know yet (background compaction runs while columns
            # are added): the schema is read again, and if it grew the read
            # starts over, as for a raw segment of an unknown row size.
            grew = getattr(t, "_schema_grew", None)
            if grew is not None and grew():
                raise _SchemaGrew()
            raise self._corrupt(68, f"ncols {ncols}, not a layout of the table's {len(t.columns)} columns")
        self.cols, self.row_size, self.dtype = lay.columns, lay.row_size, lay.dtype
        for off, what, got, want in ((16, "table id", b[16:32], t.table_id), (32, "segNo", _u64(b, 32), self.n),
                                     (40, "rowsPerSeg", _u64(b, 40), R), (56, "rowSize", _u32(b, 56), self.row_size),
                                     (60, "blockRows", _u32(b, 60), ZBLOCK_ROWS)):
            if got != want:
                raise self._corrupt(off, f"{what} {got!r}, want {want!r}")
        if rows > R:
            raise self._corrupt(48, f"{rows} rows in a segment of {R}")
        types = bytes(c.type for c in self.cols).ljust(64, b"\0")
        if b[88:152] != types:
            i = next(i for i in range(64) if b[88 + i] != types[i])
            raise self._corrupt(88 + i, f"column {i} has type code {b[88 + i]}, the schema's is {types[i]}")
        nranks = (rows + ZBLOCK_ROWS - 1) // ZBLOCK_ROWS
        nblocks = _u32(b, 64)
        if (v == 1 and nblocks != nranks) or (v == 2 and not nranks <= nblocks <= rows):
            raise self._corrupt(64, f"{nblocks} blocks for {rows} rows")
        es = (40 + 4 * ncols + 7) // 8 * 8
        index_off, index_len = _u64(b, 72), _u64(b, 80)
        if index_off < BLOCK or index_off % 8 or index_off > size:
            raise self._corrupt(72, f"index offset {index_off} in a {size}-byte file")
        end = size if v == 1 else index_off + index_len
        if index_len != nblocks * es + 4 or index_len != end - index_off or end > size:
            raise self._corrupt(80, f"index of {index_len} bytes at {index_off} in a {size}-byte file")
        # The clustering and key column: the base schema's first sym column
        # (an added sym column never is one, §15).
        self.sym_col = t.sym_col
        self.dir = None
        if v == 2:
            self._parse_v2(index_off, nblocks, es, nranks)
        self.blocks, nxt = self._parse_index(index_off, nblocks, es)
        if v == 2:
            for j, (sid, first, nb, srows, lo, hi) in enumerate(self.dir):
                blo = min(e[4] for e in self.blocks[first:first + nb])
                bhi = max(e[5] for e in self.blocks[first:first + nb])
                if (lo, hi) != (blo, bhi):
                    raise self._corrupt(self.dir_off + 40 * j + 24, f"symbol {sid}: ts from {lo} to {hi}, its blocks from {blo} to {bhi}")
            nxt = self._parse_ranks(nxt, index_off, nranks)
        if (nxt + 7) // 8 * 8 != index_off or b[nxt:index_off].strip(b"\0"):
            raise self._corrupt(nxt, f"blocks end at {nxt}, want the zero padding and the index at {index_off}")

    def _parse_v2(self, index_off, nblocks, es, nranks):
        b = self.data
        if self.sym_col < 0 or _u32(b, 152) != self.sym_col:
            raise self._corrupt(152, f"clustered by column {_u32(b, 152)}, the schema's sym column is {self.sym_col}")
        if _u32(b, 164):
            raise self._corrupt(164, "reserved header word is not 0")
        nsyms = _u32(b, 156)
        if _u32(b, 160) != nranks:
            raise self._corrupt(160, f"{_u32(b, 160)} rank blocks for {self.rows} rows, want {nranks}")
        if not 1 <= nsyms <= nblocks:
            raise self._corrupt(156, f"{nsyms} symbols in {nblocks} blocks")
        index_end = index_off + nblocks * es + 4
        self.dir_off, dir_len = _u64(b, 168), _u64(b, 176)
        self.rank_off, rank_len = _u64(b, 184), _u64(b, 192)
        for off, got, want in ((168, self.dir_off, index_end + 4), (176, dir_len, nsyms * 40 + 4),
                               (184, self.rank_off, self.dir_off + dir_len + 4), (192, rank_len, nranks * 40 + 4),
                               (192, self.rank_off + rank_len, len(b))):
            if got != want:
                raise self._corrupt(off, f"table offset or length {got}, want {want}")
        if b[index_end:self.dir_off].strip(b"\0") or b[self.dir_off + dir_len:self.rank_off].strip(b"\0"):
            raise self._corrupt(index_end, "nonzero byte between tables")
        d = b[self.dir_off:self.dir_off + dir_len]
        got, want = _u32(d, nsyms * 40), crc32c(d[:nsyms * 40])
        if got != want:
            raise self._corrupt(self.dir_off + nsyms * 40, f"directory check 0x{got:08x}, want 0x{want:08x}")
        self.dir, first, rows = [], 0, 0
        for j in range(nsyms):
            x, eo = 40 * j, self.dir_off + 40 * j
            sid, f0, nb, srows = _u32(d, x), _u32(d, x + 4), _u32(d, x + 8), _u64(d, x + 16)
            if j and sid <= self.dir[-1][0]:
                raise self._corrupt(eo, f"directory entry {j}: symbol {sid} after {self.dir[-1][0]}")
            if f0 != first:
                raise self._corrupt(eo + 4, f"symbol {sid}: first block {f0}, want {first}")
            if srows == 0 or srows > self.rows - rows:
                raise self._corrupt(eo + 16, f"symbol {sid}: {srows} rows, {self.rows - rows} left in the segment")
            if nb != (srows + ZBLOCK_ROWS - 1) // ZBLOCK_ROWS or f0 + nb > nblocks:
                raise self._corrupt(eo + 8, f"symbol {sid}: {nb} blocks for {srows} rows")
            if _u32(d, x + 12):
                raise self._corrupt(eo + 12, f"symbol {sid}: reserved word is not 0")
            self.dir.append((sid, f0, nb, srows, _i64(d, x + 24), _i64(d, x + 32)))
            first += nb
            rows += srows
        if first != nblocks or rows != self.rows:
            raise self._corrupt(self.dir_off, f"directory holds {rows} rows in {first} blocks, want {self.rows} in {nblocks}")
        self._firsts = [e[1] for e in self.dir]

    def _want_block(self, i):
        """(rows, directory slot or -1) that data block i must have."""
        if self.dir is None:
            return min(self.rows - i * ZBLOCK_ROWS, ZBLOCK_ROWS), -1
        j = bisect.bisect_right(self._firsts, i) - 1
        _, first, nb, srows, _, _ = self.dir[j]
        return (ZBLOCK_ROWS if i < first + nb - 1 else srows - (nb - 1) * ZBLOCK_ROWS), j

    def _parse_index(self, off, nblocks, es):
        b, ncols = self.data, len(self.cols)
        idx = b[off:off + nblocks * es + 4]
        got, want = _u32(idx, nblocks * es), crc32c(idx[:nblocks * es])
        if got != want:
            raise self._corrupt(off + nblocks * es, f"block index check 0x{got:08x}, want 0x{want:08x}")
        blocks, nxt, prev_max = [], BLOCK, None
        for i in range(nblocks):
            e, eo = idx[i * es:(i + 1) * es], off + i * es
            want_rows, slot = self._want_block(i)
            if slot >= 0 and self.dir[slot][1] == i:
                prev_max = None  # a symbol's run starts: ts start over
            boff, blen, brows = _u64(e, 0), _u32(e, 8), _u32(e, 12)
            lo, hi, crc, word = _i64(e, 16), _i64(e, 24), _u32(e, 32), _u32(e, 36)
            col_lens = [_u32(e, 40 + 4 * c) for c in range(ncols)]
            if boff != nxt:
                raise self._corrupt(eo, f"block {i} at offset {boff}, want {nxt}")
            if blen > off - nxt:
                raise self._corrupt(eo + 8, f"block {i} of {blen} bytes at {boff} runs past the index at {off}")
            if brows != want_rows:
                raise self._corrupt(eo + 12, f"block {i} holds {brows} rows, want {want_rows}")
            if lo > hi or (prev_max is not None and lo < prev_max and not self.late):
                raise self._corrupt(eo + 16, f"block {i}: ts range {lo}..{hi} (previous block's max {prev_max})")
            if word != max(slot, 0):
                raise self._corrupt(eo + 36, f"block {i}: word at 36 is {word}, want {max(slot, 0)}")
            if e[40 + 4 * ncols:].strip(b"\0"):
                raise self._corrupt(eo + 40 + 4 * ncols, f"block {i}: nonzero entry padding")
            if sum(col_lens) + 4 * ncols != blen:
                raise self._corrupt(eo + 40, f"block {i}: column frames take {sum(col_lens) + 4 * ncols} bytes, the block {blen}")
            blocks.append((boff, blen, brows, crc, lo, hi, col_lens, max(slot, 0)))
            nxt += blen
            prev_max = hi
        return blocks, nxt

    def _parse_ranks(self, nxt, index_off, nranks):
        b, ro = self.data, self.rank_off
        rt = b[ro:ro + nranks * 40 + 4]
        got, want = _u32(rt, nranks * 40), crc32c(rt[:nranks * 40])
        if got != want:
            raise self._corrupt(ro + nranks * 40, f"rank table check 0x{got:08x}, want 0x{want:08x}")
        self.ranks, prev_max = [], None
        for r in range(nranks):
            x, eo = 40 * r, ro + 40 * r
            off, ln, crc, present = _u64(rt, x), _u32(rt, x + 8), _u32(rt, x + 12), _u32(rt, x + 16)
            lo, hi = _i64(rt, x + 24), _i64(rt, x + 32)
            rows = min(self.rows - r * ZBLOCK_ROWS, ZBLOCK_ROWS)
            if off != nxt:
                raise self._corrupt(eo, f"rank block {r} at offset {off}, want {nxt}")
            if ln == 0 or ln > index_off - nxt:
                raise self._corrupt(eo + 8, f"rank block {r} of {ln} bytes at {off} runs past the index")
            if not 1 <= present <= min(rows, len(self.dir)):
                raise self._corrupt(eo + 16, f"rank block {r}: {present} symbols in {rows} rows")
            if _u32(rt, x + 20):
                raise self._corrupt(eo + 20, f"rank block {r}: reserved word is not 0")
            if lo > hi or (prev_max is not None and lo < prev_max and not self.late):
                raise self._corrupt(eo + 24, f"rank block {r}: ts range {lo}..{hi} (previous rank block's max {prev_max})")
            self.ranks.append((off, ln, crc, present, lo, hi))
            nxt += ln
            prev_max = hi
        return nxt

    # -- decoding

    def _check_crcs(self, ks):
        """Check the CRC32C of data blocks ks (in one vectorised pass)."""
        ks = [k for k in ks if k not in self._crc_ok]
        for k, got in zip(ks, _crcs([self.data[e[0]:e[0] + e[1]] for e in (self.blocks[k] for k in ks)])):
            off, crc = self.blocks[k][0], self.blocks[k][3]
            if got != crc:
                raise self._corrupt(off, f"block {k} check 0x{got:08x}, want 0x{crc:08x} (index)")
            self._crc_ok.add(k)

    def _frames(self, k):
        """Data block k's column frames (offset, bytes), after its CRC32C and length prefixes are checked."""
        off, ln, _, crc, _, _, col_lens, _ = self.blocks[k]
        self._check_crcs([k])
        body = self.data[off:off + ln]
        frames, p = [], 0
        for c, want in enumerate(col_lens):
            if _u32(body, p) != want:
                raise self._corrupt(off + p, f"block {k} column {c}: frame length {_u32(body, p)}, the index says {want}")
            frames.append((off + p + 4, body[p + 4:p + 4 + want]))
            p += 4 + want
        return frames

    def _column(self, k, c, frames, n, decode, *args):
        """Decompress and decode column c's frame of data block k (n rows): the values."""
        off, frame = frames[c]
        name = self.cols[c].name if not (self.version == 2 and c == self.sym_col) else "seq"
        try:
            raw = _zframe(frame, 64 + 10 * n + 8)
            rate = None
            if decode is decode_ts and self.version == 2:
                if len(raw) < 8:
                    raise _CodecError(f"{len(raw)} bytes, no room for the rate")
                rate, raw = raw[:8].view("<u8")[0], raw[8:]
            vals, used = decode(raw, n, *args)
            if used != len(raw):
                raise _CodecError(f"{len(raw) - used} bytes after the column's values")
        except _CodecError as e:
            raise self._corrupt(off, f"block {k} column {name!r}: {e}")
        return vals if rate is None else (vals, rate)

    def _check_ts(self, ts, lo, hi, off, what):
        if len(ts) == 0:
            return
        if not self.late and np.any(ts[1:] < ts[:-1]):
            i = int(np.flatnonzero(ts[1:] < ts[:-1])[0]) + 1
            raise self._corrupt(off, f"{what} row {i}: ts {ts[i]} below {ts[i - 1]}")
        if int(ts.min()) != lo or int(ts.max()) != hi:
            raise self._corrupt(off, f"{what}: ts from {ts.min()} to {ts.max()}, the index says {lo} to {hi}")

    def _fill(self, out, at, k, frames, n, key):
        """Decode the columns of data block k other than the sym column
        (version 1: keyed by key) into out[at]."""
        for c, col in enumerate(self.cols):
            if c == self.sym_col:
                continue
            if col.type == TYPE_TS:
                continue  # the caller decodes ts (its checks differ by version)
            dec = {TYPE_SYM: decode_u32, TYPE_F64: decode_f64, TYPE_I64: decode_i64, TYPE_BOOL: decode_bool}[col.type]
            args = (key,) if col.type in (TYPE_F64, TYPE_I64) else ()
            out[col.name][at] = self._column(k, c, frames, n, dec, *args)

    def rows_range(self, a, b):
        """Rows [a, b) of the segment (indexes within it), sealed, as a flat uint8 array."""
        if b > self.rows:
            raise self._corrupt(48, f"holds {self.rows} rows, not row {b - 1} of the segment")
        t = self.t
        base = self.n * t.rows_per_seg
        if self.version == 1:
            k0, k1 = a // ZBLOCK_ROWS, (b + ZBLOCK_ROWS - 1) // ZBLOCK_ROWS
            self._check_crcs(range(k0, k1))
            out = np.zeros((k1 - k0) * ZBLOCK_ROWS if k1 > k0 else 0, dtype=self.dtype)
            for k in range(k0, k1):
                boff, _, n, _, lo, hi = self.blocks[k][:6]
                frames = self._frames(k)
                at = slice((k - k0) * ZBLOCK_ROWS, (k - k0) * ZBLOCK_ROWS + n)
                key = None
                if self.sym_col >= 0:
                    key = self._column(k, self.sym_col, frames, n, decode_u32)
                    out[self.cols[self.sym_col].name][at] = key
                ts = self._column(k, 0, frames, n, decode_ts)
                self._check_ts(ts, lo, hi, frames[0][0], f"block {k}")
                out["ts"][at] = ts
                self._fill(out, at, k, frames, n, key)
            lo_row = k0 * ZBLOCK_ROWS
            out = out[a - lo_row:b - lo_row]
        else:
            if self._v2 is None:
                self._v2 = self._decode_v2()
            out = self._v2[a:b]
        buf = np.ascontiguousarray(out).view(np.uint8).reshape(-1).copy()
        seal_rows(buf, self.row_size, np.arange(base + a, base + b, dtype=np.uint64))
        return buf

    def _decode_v2(self):
        """Every row of a version 2 file, in seq order (check words not set).

        Each data block's seq column says where its rows go; the seq-order
        index (rank frames) must agree: every row of the segment is in
        exactly one block, the rank frames list each row's symbol slot, the
        slots present and their rows before the rank block, and each
        symbol's rows ascend in seq across its blocks (§10.2 "Seq → row")."""
        rows = self.rows
        out = np.zeros(rows, dtype=self.dtype)
        slot_of = np.full(rows, -1, np.int64)
        ts_name, sym_name = self.cols[0].name, self.cols[self.sym_col].name
        self._check_crcs(range(len(self.blocks)))
        rank_crcs = _crcs([self.data[e[0]:e[0] + e[1]] for e in self.ranks])
        for j, (sid, first, nb, _, _, _) in enumerate(self.dir):
            prev = -1
            for k in range(first, first + nb):
                boff, _, n, _, lo, hi = self.blocks[k][:6]
                frames = self._frames(k)
                q = self._column(k, self.sym_col, frames, n, decode_i64)
                zz = _zigzag(q.view(np.uint64))
                if np.any(zz >= _U64(rows)):
                    raise self._corrupt(frames[self.sym_col][0], f"block {k}: seq gap out of the segment of {rows} rows")
                o = (np.cumsum(zz + _U64(1), dtype=np.uint64) - _U64(1)).astype(np.int64)
                if o[-1] >= rows or o[0] <= prev:
                    raise self._corrupt(frames[self.sym_col][0], f"block {k}: seq offsets {o[0]}..{o[-1]} after {prev} in a segment of {rows} rows")
                if np.any(slot_of[o] >= 0):
                    raise self._corrupt(frames[self.sym_col][0], f"block {k}: a row already in another block")
                prev = int(o[-1])
                slot_of[o] = j
                d, rate = self._column(k, 0, frames, n, decode_ts)
                ts = (d.view(np.uint64) + rate * (o - o[0]).astype(np.uint64)).view(np.int64)
                self._check_ts(ts, lo, hi, frames[0][0], f"block {k}")
                out[ts_name][o] = ts
                out[sym_name][o] = sid
                self._fill(out, o, k, frames, n, None)
        if rows and slot_of.min() < 0:
            raise self._corrupt(self.blocks[0][0], f"row {int(np.flatnonzero(slot_of < 0)[0])} is in no data block")
        nsyms = len(self.dir)
        before = np.zeros(nsyms, np.int64)  # each slot's rows before the rank block
        for r, (off, ln, crc, m, lo, hi) in enumerate(self.ranks):
            n = min(rows - r * ZBLOCK_ROWS, ZBLOCK_ROWS)
            body = self.data[off:off + ln]
            got = rank_crcs[r]
            if got != crc:
                raise self._corrupt(off, f"rank block {r} check 0x{got:08x}, want 0x{crc:08x} (rank table)")
            try:
                raw = _zframe(body, (64 + 10 * n) + 2 * (64 + 10 * m))
                if nsyms > 1 << 16:
                    slots, u1 = decode_u32(raw, n)
                else:
                    w = 1 if nsyms <= 1 << 8 else 2
                    if len(raw) < n * w:
                        raise _CodecError(f"slot list of {len(raw)} bytes, want {n * w}")
                    slots, u1 = raw[:n * w].view("<u1" if w == 1 else "<u2"), n * w
                present, u2 = decode_u32(raw[u1:], m)
                counts, u3 = decode_i64(raw[u1 + u2:], m)
                if u1 + u2 + u3 != len(raw):
                    raise _CodecError(f"{len(raw) - u1 - u2 - u3} bytes after the rank block's values")
            except _CodecError as e:
                raise self._corrupt(off, f"rank block {r}: {e}")
            mine = slot_of[r * ZBLOCK_ROWS:r * ZBLOCK_ROWS + n]
            uniq = np.unique(mine)
            if (not np.array_equal(slots.astype(np.int64), mine) or not np.array_equal(present.astype(np.int64), uniq)
                    or not np.array_equal(counts, before[uniq])):
                raise self._corrupt(off, f"rank block {r}: the seq-order index disagrees with the data blocks' seq columns")
            before += np.bincount(mine, minlength=nsyms)
            self._check_ts(out[ts_name][r * ZBLOCK_ROWS:r * ZBLOCK_ROWS + n], lo, hi, off, f"rank block {r}")
        return out


    # -- the columnar fast path (Table.read without verification)

    def _col_raws(self, ks, c):
        """Column c's zstd frames of data blocks ks, decompressed (bytes
        each): the length prefix against the index, the frame's content size
        bounded, its checksum verified by zstd, nothing after it."""
        if zstandard is None:
            _zframe(b"", 0)  # raises the missing-module error
        dec = getattr(_ZSTD, "dec", None)
        if dec is None:
            dec = _ZSTD.dec = zstandard.ZstdDecompressor()
        b, out = self.data, []
        for k in ks:
            off, _, n, _, _, _, col_lens, _ = self.blocks[k]
            p, ln = off + 4 * (c + 1) + sum(col_lens[:c]), col_lens[c]
            if int.from_bytes(b[p - 4:p], "little") != ln:
                raise self._corrupt(p - 4, f"block {k} column {c}: frame length "
                                           f"{int.from_bytes(b[p - 4:p], 'little')}, the index says {ln}")
            frame, limit = b[p:p + ln], 64 + 10 * n + 8
            try:
                if not frame:
                    raise _CodecError("zstd: empty input")
                size = zstandard.frame_content_size(frame)
                if size > limit:
                    raise _CodecError(f"zstd: frame holds {size} bytes, max {limit}")
                out.append(dec.decompress(frame, max_output_size=limit, allow_extra_data=False))
            except (zstandard.ZstdError, _CodecError) as e:
                raise self._corrupt(p, f"block {k} column {self.cols[c].name!r}: zstd: {e}")
        return out

    def _batch(self, ks, c, counts, decode, *args):
        """decode(the column c frames of blocks ks, counts, *args), a codec error naming the blocks."""
        raws = self._col_raws(ks, c)
        try:
            return decode(raws, counts, *args)
        except _CodecError as e:
            raise self._corrupt(self.blocks[ks[0]][0], f"blocks {ks[0]}..{ks[-1]} column {self.cols[c].name!r}: {e}")

    def select(self, names, lo, hi, t_from, t_to, sym_ids):
        """The rows lo <= i < hi of the segment (indexes in it) whose ts is
        in [t_from, t_to) (None: unbounded) and, with sym_ids (a set of
        ids), whose clustering column is one of them: (their indexes,
        ascending; {name: values} for each of names in the segment's
        layout; the data blocks decoded). Only those columns, and only the
        blocks whose index ts range meets the window (version 2: of the
        symbols asked, from the directory) are decoded. Checks: the
        index and directory (at open), each frame's length, zstd content
        size and checksum, the codec structure; the block CRC32Cs and the
        seq-order index are the verified path's (rows_range)."""
        tlo = -(1 << 63) if t_from is None else t_from
        thi = 1 << 63 if t_to is None else t_to
        sc, Z = self.sym_col, ZBLOCK_ROWS
        want = [(i, c) for i, c in enumerate(self.cols) if c.name in names]
        if self.version == 1:
            ks = [k for k in range(lo // Z, (hi + Z - 1) // Z) if self.blocks[k][5] >= tlo and self.blocks[k][4] < thi]
        else:
            ks = [k for sid, first, nb, _, slo, shi in self.dir if sym_ids is None or sid in sym_ids
                  if shi >= tlo and slo < thi
                  for k in range(first, first + nb) if self.blocks[k][5] >= tlo and self.blocks[k][4] < thi]
        if not ks:
            return np.zeros(0, np.int64), {c.name: np.zeros(0, _TYPE_DTYPE[c.type]) for _, c in want}, ks
        counts = np.array([self.blocks[k][2] for k in ks], np.int64)
        starts = np.cumsum(counts) - counts
        vals, key = {}, None
        if self.version == 1:
            offs = _expand(np.array(ks, np.int64) * Z - starts, counts).view(np.int64) + np.arange(int(counts.sum()))
            if sc >= 0 and (sym_ids is not None or any(c.type in (TYPE_F64, TYPE_I64) or i == sc for i, c in want)):
                key = self._batch(ks, sc, counts, batch_u32)
                vals[self.cols[sc].name] = key
            if t_from is not None or t_to is not None or any(i == 0 for i, _ in want):
                vals[self.cols[0].name] = self._batch(ks, 0, counts, batch_ts)
        else:
            q = self._batch(ks, sc, counts, batch_i64).view(np.uint64)
            o = _segsum(_zigzag(q) + _U64(1), counts) - _U64(1)
            if np.any(o >= _U64(self.rows)):
                raise self._corrupt(self.blocks[ks[0]][0], f"blocks {ks[0]}..{ks[-1]}: seq offset past the segment's {self.rows} rows")
            offs = o.astype(np.int64)
            vals[self.cols[sc].name] = _expand([self.dir[self.blocks[k][7]][0] for k in ks], counts).astype(np.uint32)
            if t_from is not None or t_to is not None or any(i == 0 for i, _ in want):
                raws = self._col_raws(ks, 0)
                if any(len(r) < 8 for r in raws):
                    raise self._corrupt(self.blocks[ks[0]][0], "ts frame with no room for its rate")
                try:
                    d = batch_ts([r[8:] for r in raws], counts)
                except _CodecError as e:
                    raise self._corrupt(self.blocks[ks[0]][0], f"blocks {ks[0]}..{ks[-1]} column 'ts': {e}")
                rate = np.frombuffer(b"".join(r[:8] for r in raws), "<u8")
                if np.any(rate):  # rate*(o - o0) summed as rate*gap per row: one more running sum
                    g = o - np.concatenate(([_U64(0)], o[:-1]))
                    g[starts] = 0
                    d = d.view(np.uint64) + _segsum(g * _expand(rate, counts), counts)
                vals[self.cols[0].name] = d.view(np.int64)
        for i, c in want:
            if c.name in vals:
                continue
            dec = {TYPE_SYM: batch_u32, TYPE_F64: batch_f64, TYPE_I64: batch_i64, TYPE_BOOL: batch_bool}[c.type]
            vals[c.name] = self._batch(ks, i, counts, dec, *((key,) if c.type in (TYPE_F64, TYPE_I64) else ()))
        keep = np.ones(len(offs), bool) if lo == 0 and hi >= self.rows else (offs >= lo) & (offs < hi)
        if t_from is not None or t_to is not None:
            ts = vals[self.cols[0].name]
            keep &= (ts >= tlo) & (ts < thi)
        if self.version == 1 and sym_ids is not None:  # no sym column: no row is of a symbol
            keep &= False if key is None else np.isin(key, np.fromiter(sym_ids, np.uint32))
        if not keep.all():
            offs = offs[keep]
            vals = {k: v[keep] for k, v in vals.items()}
        if self.version == 2:  # rows in seq order: each to its rank among the offsets kept
            present = np.zeros(self.rows, bool)
            present[offs] = True
            if np.count_nonzero(present) != len(offs):
                raise self._corrupt(self.blocks[ks[0]][0], "a row of the segment in two data blocks")
            dest = offs if len(offs) == self.rows else np.cumsum(present)[offs] - 1
            for k, v in vals.items():
                out = np.empty_like(v)
                out[dest] = v
                vals[k] = out
            offs = np.flatnonzero(present)
        return offs, {c.name: vals[c.name] for _, c in want}, ks


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


class _RawPart:
    """Consecutive rows of one raw segment, in its layout lay: buf (n, rs)
    uint8, a view of the mapped durable file or a verified copy of a live
    slot; the first has seq first, and path/off name the first's bytes;
    sel, when set, the indexes of the rows kept (a symbol or late-row
    filter)."""

    def __init__(self, buf, lay, first, path, off, verified):
        self.buf, self.lay, self.first, self.path, self.off = buf, lay, first, path, off
        self.verified, self.sel = verified, None

    def __len__(self):
        return len(self.buf) if self.sel is None else len(self.sel)

    def seqs(self):
        s = np.arange(self.first, self.first + len(self.buf), dtype=np.uint64)
        return s if self.sel is None else s[self.sel]

    def _rows(self):
        return self.buf.reshape(-1).view(self.lay.dtype)

    def column(self, col):
        if col.name not in self.lay.dtype.names:
            return _missing(col, len(self))
        v = self._rows()[col.name]
        return v if self.sel is None else v[self.sel]

    def keep(self, mask):
        """Keep the rows (of those kept so far) where mask is true; a slice cuts the view itself."""
        if isinstance(mask, slice):
            if self.sel is None:
                a = mask.start or 0
                self.buf, self.first, self.off = self.buf[mask], self.first + a, self.off + a * self.lay.row_size
                return
            mask = np.arange(len(self.sel))[mask]
        idx = np.flatnonzero(mask) if mask.dtype == bool else mask
        self.sel = idx if self.sel is None else self.sel[idx]

    def row_bytes(self, t):
        """The rows in t's newest layout as (n, t.row_size) uint8 (check words included)."""
        b = self.buf if self.sel is None else self.buf[self.sel]
        if self.lay.row_size == t.row_size:
            return b
        return relayout_rows(np.ascontiguousarray(b).reshape(-1), self.lay.row_size, t.columns, t.row_size,
                             self.seqs()).reshape(-1, t.row_size)

    def verify(self):
        """Check every kept row's check word (§2); CorruptError names the file and offset."""
        if self.verified or len(self) == 0:
            return
        b = np.ascontiguousarray(self.buf if self.sel is None else self.buf[self.sel])
        rs = self.lay.row_size
        words = b.view("<u8").reshape(len(b), rs // 8)
        seqs = self.seqs()
        want = row_checks(words, seqs)
        got = (words[:, -1] >> np.uint64(32)).astype(np.uint32)
        bad = np.flatnonzero(got != want)
        if bad.size:
            i = int(bad[0])
            seq = int(seqs[i])
            raise CorruptError(self.path, self.off + (seq - self.first) * rs,
                               f"row seq {seq}: check word 0x{int(got[i]):08x}, want 0x{int(want[i]):08x}")
        self.verified = True


class _ColPart:
    """Rows of one compressed segment, decoded column by column: seqs,
    cols {name: values} in the segment's layout lay, decoded from data
    blocks ks of z."""

    def __init__(self, z, seqs, cols, ks):
        self.z, self._seqs, self.cols, self.ks, self.lay = z, seqs, cols, ks, _Layout(z.cols, z.row_size, z.dtype)

    def __len__(self):
        return len(self._seqs)

    def seqs(self):
        return self._seqs

    def column(self, col):
        v = self.cols.get(col.name)
        return _missing(col, len(self)) if v is None else v

    def keep(self, mask):
        self._seqs = self._seqs[mask]
        self.cols = {k: v[mask] for k, v in self.cols.items()}

    def row_bytes(self, t):
        rows = np.zeros(len(self), self.lay.dtype)
        for c in self.lay.columns:
            rows[c.name] = self.cols[c.name]
        buf = rows.view(np.uint8).reshape(-1)
        seal_rows(buf, self.lay.row_size, self._seqs)
        if self.lay.row_size != t.row_size:
            buf = relayout_rows(buf, self.lay.row_size, t.columns, t.row_size, self._seqs)
        return buf.reshape(-1, t.row_size)

    def verify(self):
        """The CRC32C of every data block the rows were decoded from (§10)."""
        self.z._check_crcs(self.ks)


class Snapshot:
    """Rows of a table as read at one moment: every published row in
    [first_seq, visible), or those a read's time window and symbols
    select, in sequence (arrival) order.

    Columns come as numpy arrays: column(name), to_numpy(), to_pandas(),
    and rows, the raw rows as a structured array (dtype Table.dtype, the
    table's row bytes, check words included). A raw segment's rows are
    views of its mapped durable file (zero copy: valid after the table is
    closed, as the mapping lives as long as the arrays); live-slot rows are
    copied; compressed ones decoded. With rows from several segments a
    column is one concatenation (a copy) of theirs.

    Check words (§2) of rows read from durable raw files are verified when
    the read asked for it (read(verify=True), Table(verify=True)) or when
    verify() is called; a compressed segment's block CRC32Cs likewise.
    Live-slot rows are always verified (a recycled slot shows as a bad
    check word).
    """

    def __init__(self, table, parts, names, pub, durable, durable_segs, symbols, scanned, unavailable):
        self._cols = [c for n in names for c in table.columns if c.name == n]
        self._all = [c for c in table.columns]
        self._dtype, self._row_size, self._ncols = table.dtype, table.row_size, len(table.columns)
        self._table = _TableShape(table)
        self._parts = parts
        self.first_seq, self.visible, self.last_ts = pub.first_seq, pub.visible, pub.last_ts
        self.durable, self.durable_segs = durable, durable_segs
        self.symbols = symbols  # id -> name as bytes
        self.scanned = scanned  # rows of [first_seq, visible) the read's time window covered
        self.unavailable = unavailable  # published rows after the returned ones that could not be read
        self._rows = None

    def __len__(self):
        return sum(len(p) for p in self._parts)

    @property
    def columns(self):
        """The names of the columns read, in the order asked (default the schema's)."""
        return [c.name for c in self._cols]

    @property
    def rows(self):
        """The rows as a numpy structured array, built on first use: the
        table's dtype (itemsize rowSize, check words as stored) when every
        column was read, else a packed one of the columns read. One raw
        segment's rows, unfiltered, are a view of the mapped file."""
        if self._rows is None:
            if len(self._cols) == self._ncols:
                bufs = [p.row_bytes(self._table) for p in self._parts]
                if len(bufs) == 1:
                    b = bufs[0]
                else:
                    b = np.concatenate(bufs) if bufs else np.zeros((0, self._row_size), np.uint8)
                self._rows = np.ascontiguousarray(b).reshape(-1).view(self._dtype)
            else:
                dt = np.dtype([(c.name, _TYPE_DTYPE[c.type]) for c in self._cols])
                rows = np.empty(len(self), dt)
                for c in self._cols:
                    rows[c.name] = self.column(c.name)
                self._rows = rows
        return self._rows

    def column(self, name):
        """One column's values (ts as int64 ns, sym as uint32 ids)."""
        col = next((c for c in self._all if c.name == name), None)
        if col is None:
            raise KeyError(f"tickdb: no column {name!r}; the table's are {[c.name for c in self._all]}")
        vs = [p.column(col) for p in self._parts]
        if len(vs) == 1:
            return vs[0]
        return np.concatenate(vs) if vs else np.zeros(0, _TYPE_DTYPE[col.type])

    def seqs(self):
        """The sequence numbers of the rows (uint64)."""
        vs = [p.seqs() for p in self._parts]
        return vs[0] if len(vs) == 1 else np.concatenate(vs) if vs else np.zeros(0, np.uint64)

    def verify(self):
        """Verify what the read did not (check words, block CRC32Cs); CorruptError on damage."""
        for p in self._parts:
            p.verify()
        return self

    def symbol(self, sym_id):
        """The name (str, UTF-8 with undecodable bytes escaped) of a sym id;
        NO_SYM (a sym column added after the row was written, §15) is ""."""
        if sym_id == NO_SYM:
            return ""
        return self.symbols[sym_id].decode("utf-8", "backslashreplace")

    def _names(self):
        return [s.decode("utf-8", "backslashreplace") for s in self.symbols]

    def names(self, column):
        """The names of a sym column's values, as a list of str (NO_SYM: "")."""
        decoded = self._names()
        return ["" if i == NO_SYM else decoded[i] for i in self.column(column).tolist()]

    def to_numpy(self):
        """The columns read, by name, as numpy arrays (a dict in column
        order): ts as datetime64[ns] (UTC; numpy has no zone), sym
        columns as uint32 ids into symbols (NO_SYM: none), f64, i64,
        bool. Views where numpy allows (one raw segment: strided views of
        the mapped rows), else one copy of each column."""
        out = {}
        for c in self._cols:
            v = self.column(c.name)
            out[c.name] = v.view("datetime64[ns]") if c.type == TYPE_TS else v
        return out

    def to_pandas(self, index=False):
        """A pandas DataFrame of the columns read: ts as datetime64[ns, UTC]
        (the index, named ts, with index=True), each sym column a
        Categorical whose categories are the table's dictionary (str, in id
        order, so the codes are the ids) and whose missing value (NaN)
        is NO_SYM, a sym column added after the row was written; f64
        (NaN missing), i64, bool."""
        import pandas as pd
        cats = None
        data = {}
        for c in self._cols:
            v = self.column(c.name)
            if c.type == TYPE_TS:
                v = pd.arrays.DatetimeArray(np.ascontiguousarray(v).view("datetime64[ns]"), dtype=pd.DatetimeTZDtype(tz="UTC"))
            elif c.type == TYPE_SYM:
                if cats is None:
                    cats = pd.Index(self._names(), dtype=object)
                    if not cats.is_unique:  # names that differ only in undecodable bytes
                        cats = pd.Index(list(self.symbols), dtype=object)
                v = pd.Categorical.from_codes(v.view(np.int32), categories=cats)  # NO_SYM reads as -1: NaN
            data[c.name] = v
        df = pd.DataFrame(data, copy=False)
        if index and "ts" in df.columns:
            df = df.set_index("ts")
        return df


class _TableShape:
    """What building a snapshot's rows needs of its table (kept apart so a
    snapshot holds no mapping of ctl)."""

    def __init__(self, t):
        self.columns, self.row_size = list(t.columns), t.row_size


def _row_dtype(cols, row_size):
    """The numpy structured dtype of rows: each column at its schema offset."""
    return np.dtype({
        "names": [c.name for c in cols],
        "formats": [_TYPE_DTYPE[c.type] for c in cols],
        "offsets": [c.offset for c in cols],
        "itemsize": row_size,
    })


@dataclass(frozen=True)
class _Layout:
    """One of the row layouts a table's rows have had (§15): the schema's
    first len(columns) columns, rows of row_size bytes."""
    columns: list
    row_size: int
    dtype: np.dtype


def _layouts(cols, nbase, base_row_size):
    """The layouts of a schema whose first nbase columns are the base (rows
    of base_row_size bytes) and the rest added one at a time (§15): each
    added column at the previous layout's row size minus 4, the new row
    size that offset + width + 4 rounded up to 8. Raises ValueError naming
    the first added column whose stored offset is not its layout's."""
    out = [_Layout(cols[:nbase], base_row_size, _row_dtype(cols[:nbase], base_row_size))]
    rs = base_row_size
    for k in range(nbase, len(cols)):
        c = cols[k]
        if c.offset != rs - 4:
            raise ValueError(f"column {c.name!r} stored at offset {c.offset}, its layout gives {rs - 4}")
        rs = (rs - 4 + _TYPE_WIDTH[c.type] + 4 + 7) // 8 * 8
        out.append(_Layout(cols[:k + 1], rs, _row_dtype(cols[:k + 1], rs)))
    return out


# The bytes of each type's missing value (§15) as tickdb stores it in a
# relaid row: Go's math.NaN() (so rows match tickdb's byte for byte), the
# sym id NO_SYM; zero for i64 and bool.
_MISSING = {TYPE_F64: np.frombuffer((0x7FF8000000000001).to_bytes(8, "little"), np.uint8),
            TYPE_SYM: np.frombuffer(b"\xff\xff\xff\xff", np.uint8)}


def relayout_rows(buf, row_size, columns, new_row_size, seqs):
    """Rows of an earlier layout (buf: len(seqs) rows of row_size bytes,
    check words verified) in the layout of columns (new_row_size bytes),
    as tickdb's store.Relayout does: each row's bytes before its check word,
    zeros after them, the missing value of every column the row lacks
    (§15), and a new check word for its seq. Returns a flat uint8 array."""
    n = len(seqs)
    if row_size == new_row_size:
        return buf
    src = np.asarray(buf, np.uint8).reshape(n, row_size)
    out = np.zeros((n, new_row_size), np.uint8)
    out[:, :row_size - 4] = src[:, :row_size - 4]
    for c in columns:
        if c.offset + _TYPE_WIDTH[c.type] > row_size - 4 and c.type in _MISSING:
            out[:, c.offset:c.offset + _TYPE_WIDTH[c.type]] = _MISSING[c.type]
    out = out.reshape(-1)
    seal_rows(out, new_row_size, np.asarray(seqs, np.uint64))
    return out


def read_compressed(path, columns, row_size, rows_per_seg, seg_no, table_id=None):
    """Decode a compressed segment file (seg-N.zdat, §10) on its own.

    columns: the table's schema as Columns or (name, type code, offset)
    tuples in schema order (ts first), as Table.columns; table_id: 16 bytes,
    or None to take the file's. Returns
    the segment's rows as a structured array (check words recomputed for
    sequence numbers seg_no*rows_per_seg + i). Raises CorruptError or
    VersionError as Table.read does.
    """
    from types import SimpleNamespace
    if table_id is None:
        with open(path, "rb") as f:
            table_id = f.read(32)[16:32]
    cols = [c if isinstance(c, Column) else Column(*c) for c in columns]
    lay = _Layout(cols, row_size, _row_dtype(cols, row_size))
    t = SimpleNamespace(columns=cols, rows_per_seg=rows_per_seg, table_id=bytes(table_id),
                        sym_col=next((i for i, c in enumerate(cols) if c.type == TYPE_SYM), -1),
                        layout_of_ncols=lambda n: lay if n == len(cols) else None)
    z = _ZSeg(t, seg_no, path)
    return z.rows_range(0, z.rows).view(lay.dtype)


# ---------------------------------------------------------------- the table


class Table:
    """A tickdb table opened read-only.

    Not safe for concurrent use by several threads; open one per thread.
    """

    def __init__(self, db, table, verify=False):
        self.dir = os.path.join(db, table)
        self.verify = verify  # read()'s default: verify check words and block CRC32Cs as rows are read
        self.ctl_path = os.path.join(self.dir, "ctl")
        self._ctl = _map(self.ctl_path)
        if len(self._ctl) < CTL_SIZE:
            raise CorruptError(self.ctl_path, len(self._ctl), f"file is {len(self._ctl)} bytes, want {CTL_SIZE}")
        # Page 1 as u64 words: each element read goes to the shared mapping,
        # so it sees the writer's latest stores (8-aligned loads are atomic).
        self._words = self._ctl[:CTL_SIZE].view("<u8")
        self._parse_header(bytes(self._ctl[:BLOCK]))
        self._schema_path = os.path.join(self.dir, "schema")
        self._schema_loaded = False
        self._check_features()
        self._sym_path = os.path.join(self.dir, "sym.dat")
        self._sym_names = []   # parsed dictionary entries, id order
        self._sym_off = BLOCK  # offset of the next entry to parse
        self._sym_map = None
        self._zseg = None      # the compressed segment read last (the verified path)
        self._zsegs = {}       # parsed compressed segments by number (the fast path)

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
        if len({c.name for c in cols}) != len(cols):
            raise CorruptError(p, 72, "duplicate column name")
        self.base_columns, self.base_row_size = cols, self.row_size
        self._set_schema(cols, len(cols))

    def _set_schema(self, cols, nbase):
        """Take cols (the first nbase the base, the rest added, §15) as the
        table's schema: columns, row_size and dtype are the newest layout's;
        rows of the earlier layouts are relaid into it as they are read."""
        self._layout_list = _layouts(cols, nbase, self.base_row_size)
        self.columns, self.nbase = cols, nbase
        self.row_size, self.dtype = self._layout_list[-1].row_size, self._layout_list[-1].dtype
        # The postings (clustering, key) column: the base's first sym column.
        self.sym_col = next((i for i, c in enumerate(cols[:nbase]) if c.type == TYPE_SYM), -1)

    def layout_of_ncols(self, ncols):
        """The layout of the schema's first ncols columns, or None."""
        k = ncols - self.nbase
        return self._layout_list[k] if 0 <= k < len(self._layout_list) else None

    def _layout_of_row_size(self, rs):
        return next((lay for lay in self._layout_list if lay.row_size == rs), None)

    # -- features (§12) and the schema file (§15)

    def _check_features(self):
        """Refuse a feature bit this reader does not know; load the schema
        file once bit 3 (columns) is set."""
        features = self._word(OFF_FEATURES)
        if features & ~KNOWN_FEATURES:
            raise VersionError(
                f"tickdb: {self.ctl_path}: format features {features:#x} at offset {OFF_FEATURES}, this reader "
                f"knows {KNOWN_FEATURES:#x} (the table was written by a newer tickdb)")
        if features & FEAT_COLUMNS and not self._schema_loaded:
            self._load_schema()
        return features

    def _load_schema(self):
        """Read the schema file (§15) and take its schema; True if it has
        columns this reader did not have."""
        p = self._schema_path
        with open(p, "rb") as f:
            b = f.read()
        if len(b) < 36 or b[0:8] != SCHEMA_MAGIC:
            raise CorruptError(p, 0, f"magic {b[0:8]!r}, want {SCHEMA_MAGIC!r} ({len(b)} bytes)")
        if _u32(b, 8) != VERSION:
            raise VersionError(f"tickdb: {p}: schema file version {_u32(b, 8)}, this reader knows {VERSION}")
        n = _u32(b, 12)
        if 32 + n + 4 != len(b):
            raise CorruptError(p, 12, f"schema of {n} bytes in a file of {len(b)}")
        got, want = _u32(b, 32 + n), crc32c(b[:32 + n])
        if got != want:
            raise CorruptError(p, 32 + n, f"check 0x{got:08x}, want 0x{want:08x}")
        if b[16:32] != self.table_id:
            raise CorruptError(p, 16, "table id differs from ctl's")
        h = b[32:32 + n]
        ncols, row_size = (_u32(h, 0), _u32(h, 4)) if n >= 8 else (0, 0)
        if not 1 <= ncols <= 60 or 8 + 64 * ncols > n:
            raise CorruptError(p, 32, f"ncols {ncols} in a schema of {n} bytes")
        cols, nbase = [], None
        for i in range(ncols):
            e, eo = h[8 + 64 * i:8 + 64 * (i + 1)], 32 + 8 + 64 * i
            name = e[:56].split(b"\0", 1)[0].decode("utf-8")
            typ, added, off = e[56], e[57], int.from_bytes(e[58:60], "little")
            if typ not in TYPE_NAMES or (added and typ == TYPE_TS):
                raise CorruptError(p, eo + 56, f"column {name!r}: type {typ}")
            if added > 1 or (not added and nbase is not None):
                raise CorruptError(p, eo + 57, f"column {name!r}: added mark {added} (the base's columns come first)")
            if added and nbase is None:
                nbase = i
            cols.append(Column(name, typ, off))
        nbase = ncols if nbase is None else nbase
        if cols[:nbase] != list(self.base_columns):
            raise CorruptError(p, 40, f"first {nbase} columns {[c.name for c in cols[:nbase]]} are not ctl's "
                                      f"{[c.name for c in self.base_columns]}")
        if len({c.name for c in cols}) != ncols:
            raise CorruptError(p, 40, "duplicate column name")
        if ncols < len(self.columns) or cols[:len(self.columns)] != list(self.columns):
            raise CorruptError(p, 40, f"columns {[c.name for c in cols]} do not grow "
                                      f"{[c.name for c in self.columns]} (read before)")
        try:
            lays = _layouts(cols, nbase, self.base_row_size)
        except ValueError as e:
            raise CorruptError(p, 40, str(e))
        if row_size != lays[-1].row_size:
            raise CorruptError(p, 36, f"rowSize {row_size}, the layout gives {lays[-1].row_size}")
        grew = ncols > len(self.columns)
        self._set_schema(cols, nbase)
        self._schema_loaded = True
        return grew

    def _layout(self, rs, path, off):
        """The layout whose rows are rs bytes (a segment header's row size).
        An unknown one has the schema file read again: if it grew, the read
        starts over (_SchemaGrew)."""
        lay = self._layout_of_row_size(rs)
        if lay is not None:
            return lay
        if self._schema_grew():
            raise _SchemaGrew()
        raise CorruptError(path, off, f"rowSize {rs}, none of the table's layouts "
                                      f"{[lay.row_size for lay in self._layout_list]}")

    def _schema_grew(self):
        """Read the schema file again (a segment of a layout this reader
        does not know: a column added since it loaded the schema); True if
        the schema has columns this reader did not have. The first load,
        when the columns feature bit is new since read() looked at it,
        counts as growth too."""
        n = len(self.columns)
        if not self._check_features() & FEAT_COLUMNS:  # loads the schema the first time the bit is set
            return False
        return self._load_schema() or len(self.columns) > n

    def _relayout(self, buf, rs, first_seq):
        """Rows from first_seq of rs bytes (verified) in the newest layout."""
        if rs == self.row_size:
            return buf
        n = len(buf) // rs
        return relayout_rows(buf, rs, self.columns, self.row_size,
                             np.arange(first_seq, first_seq + n, dtype=np.uint64))

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

    def _seg_file_size(self, rs):
        return BLOCK + (self.rows_per_seg * rs + BLOCK - 1) // BLOCK * BLOCK

    def _check_seg_header(self, m, path, magic, seg_no):
        """Check a segment file's header (§3); its row size names the
        layout of its rows (§15), which is returned."""
        if len(m) < 64:
            raise CorruptError(path, len(m), f"file is {len(m)} bytes, shorter than a header")
        h = bytes(m[:64])
        if h[0:8] != magic:
            raise CorruptError(path, 0, f"magic {h[0:8]!r}, want {magic!r}")
        if _u32(h, 8) != VERSION:
            raise VersionError(f"tickdb: {path}: format version {_u32(h, 8)}, this reader knows {VERSION}")
        got, want = _u32(h, 56), crc32c(h[:56])
        if got != want:
            raise CorruptError(path, 56, f"header check 0x{got:08x}, want 0x{want:08x}")
        if h[16:32] != self.table_id:
            raise CorruptError(path, 16, "table id differs from ctl's")
        lay = self._layout(_u32(h, 12), path, 12)
        size = self._seg_file_size(lay.row_size)
        if len(m) < size:
            raise CorruptError(path, len(m), f"file is {len(m)} bytes, want {size}")
        for off, what, v, w in ((32, "segNo", _u64(h, 32), seg_no),
                                (40, "baseSeq", _u64(h, 40), seg_no * self.rows_per_seg),
                                (48, "rowsPerSeg", _u64(h, 48), self.rows_per_seg)):
            if v != w:
                raise CorruptError(path, off, f"{what} {v}, want {w}")
        return lay.row_size

    def _zrows(self, n, a, b):
        """Rows [a, b) of segment n from its compressed file (seg-N.zdat,
        §10), decoded and sealed, or None if it is not there and the
        compaction mark no longer covers segment n (a writer decompressed
        it meanwhile: then the raw file holds it)."""
        path = os.path.join(self.dir, f"seg-{n:010d}.zdat")
        z = self._zseg
        try:
            if z is not None:
                st = os.stat(path)
                if z.n != n or z.ident != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
                    z = None  # another segment, or compacted again since (a reopened writer appended)
            if z is None:
                z = _ZSeg(self, n, path)
        except FileNotFoundError:
            if n < self._word(OFF_CMP_SEGS):
                raise
            return None
        self._zseg = z  # one segment kept: read() takes them in order
        base = n << self.seg_shift
        return self._relayout(z.rows_range(a - base, b - base), z.row_size, a)

    def _durable_rows(self, n, a, b):
        """Rows [a, b) of segment n, copied from its durable file and
        verified: seg-N.zdat below the compaction mark (cmpSegs, §10), else
        seg-N.dat; if the file is gone, the mark is read again (the segment
        may have been compacted, or decompressed, meanwhile)."""
        path = os.path.join(self.dir, f"seg-{n:010d}.dat")
        for attempt in range(3):
            if n < self._word(OFF_CMP_SEGS):
                buf = self._zrows(n, a, b)
                if buf is not None:
                    return buf
            try:
                m = _map(path)
            except FileNotFoundError:
                if attempt < 2 and n < self._word(OFF_CMP_SEGS):
                    continue  # compacted since the look above
                raise
            rs = self._check_seg_header(m, path, b"TICKSEG\0", n)
            off = BLOCK + (a - (n << self.seg_shift)) * rs
            buf = np.array(m[off:off + (b - a) * rs])
            verify_rows(buf, rs, a, path, off)
            return self._relayout(buf, rs, a)
        raise FileNotFoundError(path)

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
        rs = self._check_seg_header(m, path, b"TICKLIV\0", n)
        # liveFrom (@72): rows of the segment below it are not in the slot
        # (a reopened writer copied in only the block it appends to); they
        # are durable and come from the durable file.
        live_from = (n << self.seg_shift) + int(m[72:80].view("<u8")[0])
        low = None
        if a < live_from:
            low = self._durable_rows(n, a, min(b, live_from))
            a = min(b, live_from)
        off = BLOCK + (a - (n << self.seg_shift)) * rs
        buf = np.array(m[off:off + (b - a) * rs])
        if self._word(e) != gen:
            return None  # the slot moved on to a newer segment while we copied
        verify_rows(buf, rs, a, path, off)
        buf = self._relayout(buf, rs, a)
        return buf if low is None else np.concatenate([low, buf])

    def _live_usable(self):
        """Live slots belong to this boot (after a restart only durable files count, §9)."""
        stored = bytes(self._ctl[OFF_BOOT_ID:OFF_BOOT_ID + 16])
        return stored == _boot_id()

    def read(self, from_ts=None, to_ts=None, syms=None, columns=None, partial=False, verify=None):
        """A Snapshot of the published rows, [firstSeq, visible), in sequence order.

        from_ts (inclusive) and to_ts (exclusive), int ns, numpy
        datetime64, or anything pandas.Timestamp takes (str, datetime),
        select rows by ts: the time index (ts.idx, §6) bounds the rows
        looked at, and a compressed segment decodes only the blocks whose
        ts range meets the window. syms (names, str or bytes, or ids)
        keeps the rows whose postings column (the first sym column) is one
        of them: a clustered compressed segment (§10.2) decodes only their
        blocks, raw rows are filtered with one numpy comparison over the
        window. columns (names) decodes and returns only those.

        verify (default the table's, False unless opened with
        verify=True): check every row's check word and every compressed
        block's CRC32C and seq-order index as the rows are read (the rows of
        a compressed segment are then decoded whole by the reference path,
        much slower). Unverified, a raw segment costs a mapping and a view,
        and snap.verify() checks later. Headers, indexes and dictionary
        entries are always checked, and rows copied from live slots always
        verified.

        A segment comes from its live slot when the slot holds it (a hot
        segment, sealed and durable, stays there until the slot is reused),
        else from its durable file: whole below durableSegs, otherwise for
        rows below durable. If some published rows can only be in a
        live slot that is gone, raises UnavailableError, or with partial=True
        returns the rows before them and counts the rest in .unavailable.

        Rows are in the table's newest schema (columns, dtype): a row
        written before a column was added (§15) reads it as its missing
        value (NaN, 0, False, the symbol id NO_SYM, named "").
        """
        verify = self.verify if verify is None else verify
        t_from, t_to = _ns(from_ts, "from_ts"), _ns(to_ts, "to_ts")
        for attempt in range(4):
            self._check_features()
            names = [c.name for c in self.columns] if columns is None else list(columns)
            unknown = [n for n in names if n not in {c.name for c in self.columns}]
            if unknown:
                raise KeyError(f"tickdb: {self.dir}: no column {unknown[0]!r}; the table's are {[c.name for c in self.columns]}")
            try:
                return self._read(partial, t_from, t_to, syms, names, verify)
            except _SchemaGrew:
                pass
        raise TickDBError(f"tickdb: {self._schema_path}: the schema kept growing during the read")

    def _sym_ids(self, syms):
        """The ids of syms (names or ids) as a set; names not in the dictionary select nothing."""
        if syms is None:
            return None
        if isinstance(syms, (str, bytes, int, np.integer)):
            syms = [syms]
        ids = {}
        names = None
        for s in syms:
            if isinstance(s, (int, np.integer)):
                ids[int(s)] = None
                continue
            if names is None:
                names = {n: i for i, n in enumerate(self.symbols())}
            i = names.get(s.encode("utf-8") if isinstance(s, str) else bytes(s))
            if i is not None:
                ids[i] = None
        return set(ids)

    def _ts_bounds(self, pub, t_from, t_to):
        """Seqs [a, b) that hold every published row with ts in [t_from,
        t_to), from the time index (§6): its entry k is the newest ts of rows
        [0, kK]. Without the index (or late rows, for the upper bound) the
        bounds stay wide; the rows are filtered by ts after."""
        a, b = pub.first_seq, pub.visible
        if (t_from is None and t_to is None) or a >= b:
            return a, b
        K = 1 << self.stride_shift
        path = os.path.join(self.dir, "ts.idx")
        try:
            m = _map(path)
        except (FileNotFoundError, ValueError):
            return a, b
        self._check_file_header(m, path, b"TICKTSI\0")
        k0 = (a + K - 1) // K  # entries of retained rows only (the ones below may be gone)
        nk = min((b - 1) // K + 1, (len(m) - BLOCK) // 8)
        if nk <= k0:
            return a, b
        keys = m[BLOCK + 8 * k0:BLOCK + 8 * nk].view("<i8")
        if t_from is not None:
            k = k0 + int(np.searchsorted(keys, t_from, "left"))  # rows <= (k-1)K have key, and ts, < t_from
            if k > 0:
                a = max(a, (k - 1) * K + 1)
        if t_to is not None and not self._word(OFF_FEATURES) & 1:  # bit 0: late rows may follow any key
            k = k0 + int(np.searchsorted(keys, t_to, "left"))  # rows >= kK have ts >= t_to
            if k < nk:
                b = min(b, k * K)
        return a, max(a, b)

    def _read(self, partial, t_from, t_to, syms, names, verify):
        pub = self.published()
        sym_ids = self._sym_ids(syms)
        a, b = self._ts_bounds(pub, t_from, t_to)
        shift = self.seg_shift
        live = self._live_usable()
        slots, parts = {}, []
        sorted_ts = not self._word(OFF_FEATURES) & 1
        seq, end, stopped = a, a, False
        while seq < b:
            n = seq >> shift
            end = min(b, (n + 1) << shift)
            got, stop = [], end
            if live and n >= self._word(OFF_CMP_SEGS):  # below the mark: compressed (§10)
                buf = self._live_rows(n, seq, end, slots)
                if buf is not None:
                    got = [_RawPart(buf.reshape(-1, self.row_size), self._layout_list[-1], seq, "", 0, True)]
            if not got:
                # No live copy: load durableSegs/durable now, after the slot
                # check, so a slot that was reassigned counts as durable.
                if n >= self._word(OFF_DURABLE_SEGS):
                    durable = self._word(OFF_DURABLE)
                    if durable < end:
                        if not partial:
                            raise UnavailableError(max(seq, durable), pub.visible)
                        stop = max(seq, durable)
                if stop > seq:
                    got = self._durable_part(n, seq, stop, names, t_from, t_to, sym_ids, verify)
            got = [self._filter(p, t_from, t_to, sym_ids, sorted_ts) for p in got]
            if verify:
                for p in got:
                    p.verify()
            parts += got
            if stop < end:
                end, stopped = stop, True
                break
            seq = end
        parts = [p for p in parts if len(p)]
        syms = self.symbols()  # loaded after the rows: covers every id they name
        return Snapshot(self, parts, names, pub, self._word(OFF_DURABLE), self._word(OFF_DURABLE_SEGS),
                        syms, end - a, pub.visible - end if stopped else 0)

    def _filter(self, p, t_from, t_to, sym_ids, sorted_ts):
        """Keep a raw part's rows in the window and of the symbols (a
        compressed part comes filtered)."""
        if not isinstance(p, _RawPart) or len(p) == 0:
            return p
        if t_from is not None or t_to is not None:
            ts = p.column(self.columns[0])
            if sorted_ts:  # binary search the mapped ts: the window's rows are a slice of the view
                i = 0 if t_from is None else bisect.bisect_left(ts, t_from)
                j = len(ts) if t_to is None else bisect.bisect_left(ts, t_to)
                p.keep(slice(i, max(i, j)))
            else:
                mask = np.ones(len(ts), bool) if t_from is None else ts >= t_from
                if t_to is not None:
                    mask &= ts < t_to
                p.keep(mask)
        if sym_ids is not None and len(p):
            if self.sym_col < 0:
                p.keep(np.zeros(len(p), bool))
            else:
                s = p.column(self.columns[self.sym_col])
                p.keep(s == next(iter(sym_ids)) if len(sym_ids) == 1 else np.isin(s, np.fromiter(sym_ids, np.uint32)))
        return p

    def _zseg_of(self, n):
        """Segment n's compressed file, parsed and checked once and kept
        while the file is the same (the last _ZSEG_KEEP used: their
        compressed bytes), or None if gone (see _zrows)."""
        path = os.path.join(self.dir, f"seg-{n:010d}.zdat")
        z = self._zsegs.pop(n, None)
        try:
            st = os.stat(path)
            if z is None or z.ident != (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns):
                z = _ZSeg(self, n, path)
        except FileNotFoundError:
            if n < self._word(OFF_CMP_SEGS):
                raise
            return None
        self._zsegs[n] = z  # most recently used last
        while len(self._zsegs) > _ZSEG_KEEP:
            del self._zsegs[next(iter(self._zsegs))]
        return z

    def _durable_part(self, n, a, b, names, t_from, t_to, sym_ids, verify):
        """Rows [a, b) of segment n from its durable file as parts: a view
        of seg-N.dat (check words verified with verify), or the selected
        rows and columns of seg-N.zdat below the compaction mark (§10)."""
        path = os.path.join(self.dir, f"seg-{n:010d}.dat")
        for attempt in range(3):
            if n < self._word(OFF_CMP_SEGS):
                if verify:
                    buf = self._zrows(n, a, b)
                    if buf is not None:
                        return [_RawPart(buf.reshape(-1, self.row_size), self._layout_list[-1], a, "", 0, True)]
                else:
                    z = self._zseg_of(n)
                    if z is not None:
                        base = n << self.seg_shift
                        offs, cols, ks = z.select(set(names), a - base, b - base, t_from, t_to, sym_ids)
                        return [_ColPart(z, (offs + base).astype(np.uint64), cols, ks)]
            try:
                m = _map(path)
            except FileNotFoundError:
                if attempt < 2 and n < self._word(OFF_CMP_SEGS):
                    continue  # compacted since the look above
                raise
            rs = self._check_seg_header(m, path, b"TICKSEG\0", n)
            off = BLOCK + (a - (n << self.seg_shift)) * rs
            # Verified (with verify) by _read once filtered: the rows returned.
            return [_RawPart(m[off:off + (b - a) * rs].reshape(-1, rs), self._layout_of_row_size(rs), a, path, off, False)]
        raise FileNotFoundError(path)

    def close(self):
        """Drop the mappings (numpy unmaps when the arrays are collected)."""
        self._ctl = self._words = self._sym_map = self._zseg = None
        self._zsegs = {}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def open_table(db, table, verify=False):
    """Open DB/TABLE read-only; verify: read()'s default (see Table.read)."""
    return Table(db, table, verify=verify)


def read_table(db, table, from_ts=None, to_ts=None, syms=None, columns=None, partial=False, verify=False):
    """Open DB/TABLE, read a Snapshot of its published rows (Table.read), close it."""
    with open_table(db, table) as t:
        return t.read(from_ts, to_ts, syms=syms, columns=columns, partial=partial, verify=verify)


def _ns(v, what):
    """A time argument as int ns since the epoch (UTC), or None."""
    if v is None:
        return None
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return int(v)
    if isinstance(v, np.datetime64):
        return int(v.astype("datetime64[ns]").astype(np.int64))
    try:
        try:
            import pandas as pd
        except ImportError:  # numpy alone: ISO 8601 in UTC
            return int(np.datetime64(str(v).rstrip("Z"), "ns").astype(np.int64))
        return int(pd.Timestamp(v).value)  # a naive time is UTC
    except Exception as e:
        raise ValueError(f"tickdb: {what} {v!r} is not a time (int ns, numpy datetime64, "
                         f"or what pandas.Timestamp takes): {e}") from None


# ---------------------------------------------------------------- CLI


def _json_value(col, v, syms):
    if col.type == TYPE_SYM:
        return "" if v == NO_SYM else syms[v]
    if col.type == TYPE_F64 and not math.isfinite(v):
        return "NaN" if math.isnan(v) else ("+Inf" if v > 0 else "-Inf")
    return v


def rfc3339(ts):
    """ts (int64 ns) as RFC 3339 in UTC with exactly nine fractional digits,
    as tickdb's --ts rfc3339 prints them: a list of str."""
    return [s + "Z" for s in np.datetime_as_string(np.asarray(ts, np.int64).view("datetime64[ns]"), unit="ns").tolist()]


def main(argv=None):
    ap = argparse.ArgumentParser(description="Print a tickdb table's published rows (read-only).")
    ap.add_argument("db")
    ap.add_argument("table")
    ap.add_argument("--sym", help="only rows whose first sym column is NAME")
    ap.add_argument("--from", dest="from_ts", metavar="T1", help="first ts, inclusive (RFC 3339 or integer ns)")
    ap.add_argument("--to", dest="to_ts", metavar="T2", help="end of the range, exclusive (RFC 3339 or integer ns)")
    ap.add_argument("--head", type=int, default=None, metavar="N", help="print at most N rows")
    ap.add_argument("--format", choices=("text", "json"), default="text",
                    help="json: a summary object, then one object per row (JSON Lines); "
                         "non-finite f64 values are the strings NaN, +Inf, -Inf")
    ap.add_argument("--ts", choices=("rfc3339", "ns"), default="rfc3339",
                    help="ts as RFC 3339 in UTC with nine fractional digits (default, a string in json) "
                         "or as integer ns since the epoch")
    ap.add_argument("--partial", action="store_true",
                    help="print the readable rows when some published rows are unavailable")
    a = ap.parse_args(argv)

    def when(v, what):
        return None if v is None else int(v) if v.lstrip("-").isdigit() else _ns(v, what)

    try:
        # The command line verifies every row it prints (check words,
        # block CRC32Cs): speed matters less here than to a library caller.
        with open_table(a.db, a.table, verify=True) as t:
            c = t.counters()  # before the rows: durable <= the rows read
            snap = t.read(when(a.from_ts, "--from"), when(a.to_ts, "--to"),
                          syms=None if a.sym is None else [a.sym], partial=a.partial)
    except (TickDBError, ValueError) as e:
        print(e, file=sys.stderr)
        return 1
    seqs = snap.seqs()
    syms = [s.decode("utf-8", "backslashreplace") for s in snap.symbols]
    cols = t.columns
    n = len(seqs) if a.head is None else min(len(seqs), a.head)
    values = [snap.column(col.name)[:n] for col in cols]
    values = [rfc3339(v) if col.type == TYPE_TS and a.ts == "rfc3339" else v.tolist() for col, v in zip(cols, values)]
    seqs = seqs[:n].tolist()

    out = sys.stdout
    if a.format == "json":
        summary = {"table": a.table, "count": snap.scanned, "matched": n,
                   "unavailable": snap.unavailable, "symbols": len(syms)}
        summary.update(c)
        summary.update(first_seq=snap.first_seq, visible=snap.visible, last_ts=snap.last_ts)
        out.write(json.dumps(summary) + "\n")
        for i, seq in enumerate(seqs):
            obj = {"seq": seq}
            for col, vals in zip(cols, values):
                obj[col.name] = _json_value(col, vals[i], syms)
            out.write(json.dumps(obj, allow_nan=False) + "\n")
        return 0

    out.write(f"table {a.table}: {snap.scanned} rows, seq [{snap.first_seq}, {snap.visible}), "
              f"durable {c['durable']} ({c['durable_segs']} whole segments), symbols {len(syms)}, "
              f"writer {'pid ' + str(c['writer_pid']) if c['state'] else 'closed'}\n")
    if snap.unavailable:
        out.write(f"unavailable: {snap.unavailable} published rows (live copy gone, not durable)\n")
    if a.sym is not None:
        out.write(f"sym {a.sym!r}: {n} rows shown\n")
    out.write("\t".join(["seq"] + [col.name for col in cols]) + "\n")
    for i, seq in enumerate(seqs):
        cells = [str(seq)]
        for col, vals in zip(cols, values):
            v = vals[i]
            cells.append(("" if v == NO_SYM else syms[v]) if col.type == TYPE_SYM else repr(v) if col.type == TYPE_F64 else str(v))
        out.write("\t".join(cells) + "\n")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:
        sys.exit(0)
