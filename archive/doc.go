// Package archive keeps a table's history in object storage through the
// S3 API (AWS S3, MinIO, Ceph, GCS's interoperability API, versitygw), for
// readers on any machine and for lakehouse engines.
//
// The archive of a database at s3://BUCKET/PREFIX holds, per table T:
//
//	PREFIX/T/manifest.json                     what is there: the only object a reader must trust
//	PREFIX/T/ctl                               the table's control file (schema, geometry)
//	PREFIX/T/schema                            the schema file, once columns were added
//	PREFIX/T/seg/SSSSSSSSSSSSSSSSSSSS-EEEEEEEEEEEEEEEEEEEE.zdat  a compressed segment, rows [S, E) (docs/FORMAT.md §10)
//	PREFIX/T/seg/S-E.tsi                       the segment's time index entries (§6)
//	PREFIX/T/seg/S-E.late                      its late rows' entries (§14), when it has late rows
//	PREFIX/T/sym/FFFFFFFFFFFF-TTTTTTTTTTTT     sym.dat bytes [F, T) (§5), appended as symbols are added
//	PREFIX/parquet/table=T/date=YYYY-MM-DD/S-E.parquet   the same rows as Parquet (Options.Parquet)
//
// Objects are named by what they hold, so uploading one again is
// idempotent; the manifest is written after the objects it lists. Several
// servers archive into one bucket under their own prefix (a node name).
//
// OpenReader opens an archived table read-only on any machine: a
// reader.Reader over a table directory in a local cache (bounded,
// least recently used segments evicted; see cache.go) whose compressed
// segments fill by range requests as queries read them, so that every
// query answers exactly as on the local table and a one-symbol window
// fetches that symbol's blocks, not whole objects.
package archive
