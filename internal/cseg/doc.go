// Package cseg writes and reads compressed segment files: the columnar form
// a sealed raw segment (docs/FORMAT.md §3) is rewritten into once it is
// old. Two format versions exist: 1 keeps the rows in seq order; 2
// ("clustered", what Encode writes for a schema with a sym column) groups
// them by the schema's first sym column, like kdb+'s parted attribute, so a
// one-symbol query reads only that symbol's bytes (Sym, SymSeek,
// SymBlock), while Block still returns seq-ordered blocks through a
// seq-order index. A compressed segment holds the same rows as the raw file it
// replaces, with the same identity (table id, segment number, row size,
// rows per segment); the rows come back byte for byte, check words
// included (they are not stored: Block recomputes them with format.Seal).
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
// # File layout, format version 2 (clustered by symbol)
//
// The rows are permuted: grouped by the value of the schema's first sym
// column (its "symbol"), symbols in increasing id order, each symbol's rows
// in seq order (which is ts order). Each symbol's rows fill data blocks of
// their own: ceil(rows_s / blockRows) consecutive blocks, all full but the
// last. The file is
//
//	header | data blocks | rank frames | 0-7 zero bytes | block index |
//	4 zero bytes | directory | 4 zero bytes | rank table (end of file)
//
//	header: bytes [0, 152) as in version 1 (version 2; nblocks = the data
//	  blocks, at least ceil(rows / blockRows); indexOff, indexLen the block
//	  index, indexLen = nblocks*E + 4), then
//	  @152 symCol u32      the clustering column: Schema.SymCol
//	  @156 nsyms u32       symbols in the segment (directory entries), >= 1
//	  @160 nranks u32      rank blocks: ceil(rows / blockRows)
//	  @164 reserved u32    0
//	  @168 dirOff u64      indexOff + indexLen + 4
//	  @176 dirLen u64      nsyms*40 + 4
//	  @184 rankOff u64     dirOff + dirLen + 4
//	  @192 rankLen u64     nranks*40 + 4; rankOff + rankLen = the file size
//	  @200 check u32       CRC32C of bytes [0, 200)
//	  @204 zero            up to 4096
//
//	block index: as in version 1, entry k for data block k, except
//	  @12  rows u32        blockRows, or the symbol's rows less its full blocks' for its last
//	  @16  minTs, @24 maxTs  ts of the block's first and last rows (a symbol's
//	                       blocks never go back in ts; other symbols' may)
//	  @36  slot u32        directory slot (index) of the block's symbol
//	  @40  colLen          as in version 1; the sym column's place holds the seq frame
//
//	directory (nsyms entries of 40 bytes, ids strictly increasing, then a
//	CRC32C u32 of the entries):
//	  @0   id u32          symbol id
//	  @4   first u32       its first data block: the previous entry's first + nblocks (0 for slot 0)
//	  @8   nblocks u32     ceil(rows / blockRows)
//	  @12  reserved u32    0
//	  @16  rows u64        its rows (>= 1; the entries' rows sum to the header's)
//	  @24  minTs i64       ts of its first row (its first block's minTs)
//	  @32  maxTs i64       ts of its last row (its last block's maxTs)
//
//	data block body: for each schema column c in schema order,
//	  len u32 | frame [len]   (frame = codec.Compress of the column block)
//	  where the column blocks are those of version 1 with no key (f64 and
//	  i64 "previous" is the previous row's: the block has one symbol), except:
//	    sym column (SymCol)  the seq column instead: AppendI64(q) with
//	                         q_0 = u(o_0), q_i = u(o_i - o_(i-1) - 1), o_i =
//	                         seq_i - n*R the row's index in the segment
//	                         (ascending) and u the inverse of zigzag
//	                         (u(x) = x>>1 XOR -(x&1)), so the stored varints
//	                         are the gaps themselves
//	    ts column            rate i64 (8 bytes LE) then AppendTs(d) with
//	                         d_i = ts_i - rate*(o_i - o_0) (wrapping): a
//	                         symbol's ts follow the segment's clock; rate =
//	                         (ts_last - ts_0) / (o_last - o_0) rounded down,
//	                         0 for one row (any rate decodes)
//	  The sym column itself is not stored: every row of the block has the
//	  directory's id.
//
//	rank frames: for rank block r (the rows r*blockRows .. in seq order,
//	n_r rows), one zstd frame (codec.Compress) of
//	  slots     each row's directory slot, in seq order: 1 byte each when
//	            nsyms <= 256, 2 bytes (LE) when nsyms <= 65536, else a codec
//	            AppendU32 block
//	  present   AppendU32 of the slots present in the rank block, ascending
//	  counts    AppendI64 (no key) of each present slot's rows before the rank block
//
//	rank table (nranks entries of 40 bytes, then a CRC32C u32 of them):
//	  @0   off u64         the frame's offset: the first right after the last
//	                       data block, each next right after the previous; the
//	                       last ends where the padding before the index starts
//	  @8   len u32         its length
//	  @12  crc u32         CRC32C of its bytes
//	  @16  present u32     how many slots it lists as present (>= 1)
//	  @20  reserved u32    0
//	  @24  minTs i64       ts of the rank block's first row (seq order)
//	  @32  maxTs i64       ts of its last row (<= the next rank block's minTs)
//
// Row seq = n*R + r*blockRows + i (rank block r, row i) is slot s =
// slots[i]'s row k = counts[s] + (occurrences of s in slots[0:i]), which is
// row k % blockRows of data block dir[s].first + k / blockRows; the seq
// column of that block must say seq (a reader checks it: a damaged index
// never yields another row). Block rebuilds rank block r that way; a
// one-symbol read takes the directory entry and decodes only its blocks,
// SymSeek finding the first whose maxTs reaches a ts lower bound.
//
// # Concurrency
//
// Encode shares nothing and may run in several goroutines at once. A
// *Segment is used by one goroutine at a time: Block, RowInto, SymBlock
// and SymBlockIn decode through scratch buffers the Segment owns, or
// shares with the other segments opened with the same Scratch (OpenShared;
// Scratch.Prepare readies one ahead of its first block), and in version 2
// also a decoded data block per symbol and the last rank frame. Open one
// Segment per goroutine (they share the page cache, not their scratch).
// The accessors that read only what Open checked (Rows, Blocks,
// DataBlocks, Size, ColBytes, SeqBytes, OrderBytes, BlockTs, DataBlockTs,
// Version, Sym, SymSeek; the index ones read it from the mapping) are safe
// to call concurrently with each other, but not with or after Close.
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
// index without decoding.
//
// In version 2, Block of one rank block decodes the current data block of
// every symbol in it (one per symbol, kept for the next rank blocks: a
// scan in seq order decodes each data block once, and holds up to one
// block per symbol); a random Block costs that many data block decodes,
// so a lone row is better read with RowInto (its rank frame and one data
// block). Version 2 needs Rows <= 2^32-1 and a sym column; otherwise
// Encode writes version 1. Sym ids of 65536 or more make the f64 and i64
// codecs key by a map, which allocates while it grows (codec.State).
package cseg
