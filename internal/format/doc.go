// Package format is tickdb's on-disk contract below the schema: file names
// and magics, the common file header, the segment header and its size, the
// clustered copy's header and directory, the symbol dictionary's records,
// the row check word (Check, Seal, Valid) and the relayout of a row of an
// earlier layout, and the mapping of a durable segment with its checks
// (MapSegment). docs/FORMAT.md describes every byte; a change to a
// constant marked "on-disk contract" needs a format version or an
// incompatible-feature flag (FORMAT §12).
//
// Errors in the bytes are *store.CorruptError (Corruptf), naming the file,
// the offset and what was wrong.
package format
