// Package cseg writes and reads compressed segment files: the columnar form
// a sealed raw segment (docs/FORMAT.md §3) is rewritten into once it is
// old. A compressed segment holds the same rows as the raw file it
// replaces, with the same identity (table id, segment number, row size,
// rows per segment); the rows come back byte for byte, check words
// included (they are not stored: Block recomputes them with store.Seal).
//
// Encode verifies every row's check word (and that ts never goes back, bool
// bytes are 0 or 1 and padding is zero) before it compresses anything, so
// damage in a raw file is reported, never made permanent. Every byte of a
// compressed file is covered by a CRC32C: the header's, the block index's,
// or its block's. Open checks the header and the index; Block checks its
// block before decoding it.
//
// # File layout (on-disk contract, format version 1)
//
// All integers are little-endian; offsets are in bytes from the start of
// the file. The file is a 4096-byte header block, then the blocks (block 0
// at 4096, each next one right after the previous), then 0 to 7 zero bytes
// so the index starts 8-aligned, then the block index, which ends the file.
//
//	header (bytes [0, 4096))
//	  @0   magic [8]       "TICKZSG\0"
//	  @8   version u32     1
//	  @12  reserved u32    0
//	  @16  tableID [16]    the table's id (as in ctl and the raw segment)
//	  @32  segNo u64       segment number n
//	  @40  rowsPerSeg u64  R = 2^segShift, as in ctl
//	  @48  rows u64        rows stored, 0 <= rows <= R (R for a sealed segment)
//	  @56  rowSize u32     schema row size in bytes, check word included
//	  @60  blockRows u32   rows per block: 4096 (BlockRows)
//	  @64  nblocks u32     ceil(rows / blockRows)
//	  @68  ncols u32       schema columns (1..60)
//	  @72  indexOff u64    file offset of the block index, a multiple of 8
//	  @80  indexLen u64    its length: nblocks*E + 4
//	  @88  colTypes [64]   type code (docs/FORMAT.md §2) of column i at 88+i, schema
//	                       order; zero from 88+ncols
//	  @152 check u32       CRC32C (Castagnoli) of bytes [0, 152)
//	  @156 zero            up to 4096; a reader rejects a nonzero byte
//
//	block index (bytes [indexOff, indexOff+indexLen), the end of the file)
//	  nblocks entries of E = roundup(40 + 4*ncols, 8) bytes, entry b at indexOff + b*E:
//	  @0   off u64         file offset of block b (4096 for block 0, then
//	                       the previous block's off + len)
//	  @8   len u32         block b's length in bytes
//	  @12  rows u32        its rows: blockRows, or rows - b*blockRows for the last
//	  @16  minTs i64       ts of its first row
//	  @24  maxTs i64       ts of its last row (>= minTs, <= the next block's minTs)
//	  @32  crc u32         CRC32C of the block's len bytes
//	  @36  reserved u32    0
//	  @40  colLen [ncols]u32  length of column c's frame in the block (its
//	                          4-byte length prefix excluded)
//	  zero padding up to E
//	  then check u32       CRC32C of the nblocks*E entry bytes
//
//	block body (len bytes): for each schema column c in schema order,
//	  len u32 (= colLen[c] of the index entry) | frame [len]
//	  where frame = codec.Compress(column block), one zstd frame with its
//	  content size and xxhash64 checksum, and the column block is the codec
//	  encoding of the block's values of column c (docs/FORMAT.md, codec):
//	    ts   AppendTs(ts)
//	    sym  AppendU32(ids)
//	    f64  AppendF64(values, key)   key = the rows' ids in the schema's
//	    i64  AppendI64(values, key)   first sym column (Schema.SymCol), or
//	                                  none (nil) when the schema has no sym column
//	    bool AppendBool(values)       (a row byte of 1 is true, 0 false)
//
// Row i of block b is the segment's row b*blockRows + i, with sequence
// number n*R + b*blockRows + i; its check word is computed from the decoded
// row (padding zero) as in docs/FORMAT.md "Row check". The file size is
// indexOff + indexLen exactly. A reader decodes the first sym column of a
// block before the f64 and i64 columns keyed by it.
//
// # Concurrency
//
// Encode shares nothing and may run in several goroutines at once. A
// *Segment is used by one goroutine at a time: Block decodes through
// scratch buffers the Segment owns. Open one Segment per goroutine (they
// share the page cache, not their scratch). The accessors that read only
// what Open parsed (Rows, Blocks, Size, ColBytes, BlockTs) are safe to call
// concurrently with each other, but not with Close.
//
// # Durability
//
// cseg does no fsync or rename: Encode writes to the caller's io.Writer,
// and the caller makes the file durable and moves it into place (write a
// temporary file, fsync it, rename it, fsync the directory) before removing
// the raw segment it replaces.
//
// # Caveats
//
// A Segment maps its file read-only and shared. The file must not be
// truncated or rewritten while it is open (compressed files are immutable:
// written once under a temporary name, then renamed), or reads of the
// mapping may fault.
//
// Blocks hold 4096 rows, so a segment of 2^20 rows has 256 blocks and an
// index of a few tens of KiB; BlockTs answers time-range questions from the
// index without decoding. Sym ids of 65536 or more make the f64 and i64
// codecs key by a map, which allocates while it grows (codec.State).
package cseg
