package index

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/store"
)

// The schema file holds the schema of a table that has grown columns
// (store.Schema.AddColumn) since it was created; the schema in ctl's
// header stays the one it was created with. The file is written whole
// under a temporary name and renamed into place, so a reader sees one
// complete version or the one before. Layout (docs/FORMAT.md §15):
//
//	@0  magic "TICKSCM\0"
//	@8  version u32 = 1
//	@12 len u32        schema bytes that follow the header
//	@16 tableID [16]byte
//	@32 schema         (len bytes, the encoding of ctl's header)
//	    check u32      CRC32C of every byte before it
const schemaHdr = 32

// FeatColumns marks a table with columns added after creation: its schema
// is in the schema file, and its segments may hold rows of the earlier,
// shorter layouts (docs/FORMAT.md §15).
const FeatColumns = 1 << 3

// WriteSchema writes the table's grown schema s to the schema file in dir
// through fs and makes it durable (file and directory).
func WriteSchema(dir string, s *store.Schema, tableID [16]byte, fs vfs.FS) error {
	n := s.SchemaBytes()
	b := make([]byte, schemaHdr+n+4)
	copy(b, format.MagicSchema)
	le.PutUint32(b[8:], format.FormatVersion)
	le.PutUint32(b[12:], uint32(n))
	copy(b[16:32], tableID[:])
	s.MarshalSchema(b[schemaHdr:])
	le.PutUint32(b[schemaHdr+n:], format.CRC32C(b[:schemaHdr+n]))
	path := filepath.Join(dir, format.SchemaName)
	tmp := path + ".tmp"
	if err := writeSynced(fs, tmp, b); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return err
	}
	return fs.SyncPath(dir)
}

func writeSynced(fs vfs.FS, path string, b []byte) error {
	f, err := fs.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadSchema reads the schema file of the table whose ctl is c and checks
// that it grows the schema c was created with.
func (c *Ctl) ReadSchema() (*store.Schema, error) {
	path := filepath.Join(filepath.Dir(c.Path), format.SchemaName)
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	if len(b) < schemaHdr+4 || string(b[:8]) != format.MagicSchema {
		return nil, format.Corruptf(path, 0, "not a schema file (%d bytes)", len(b))
	}
	n := int(le.Uint32(b[12:]))
	if schemaHdr+n+4 != len(b) {
		return nil, format.Corruptf(path, 12, "schema of %d bytes in a file of %d", n, len(b))
	}
	if got, want := le.Uint32(b[schemaHdr+n:]), format.CRC32C(b[:schemaHdr+n]); got != want {
		return nil, format.Corruptf(path, int64(schemaHdr+n), "check %08x, computed %08x", got, want)
	}
	if v := le.Uint32(b[8:]); v != format.FormatVersion {
		return nil, format.Corruptf(path, 8, "format version %d, this build reads %d", v, format.FormatVersion)
	}
	if string(b[16:32]) != string(c.TableID[:]) {
		return nil, format.Corruptf(path, 16, "table id %x, ctl has %x", b[16:32], c.TableID)
	}
	s, err := store.UnmarshalSchema(b[schemaHdr : schemaHdr+n])
	if err != nil {
		return nil, format.Corruptf(path, schemaHdr, "%v", err)
	}
	if s.Base() != len(c.created.Cols) || !s.Prefix(s.Base()).Equal(c.created) {
		return nil, format.Corruptf(path, schemaHdr, "columns %s do not grow the table's %s", s, c.created)
	}
	return s, nil
}

// LoadSchema sets c.Schema to the table's current schema: the schema file's
// when the table has grown columns, else the one it was created with. A
// reader calls it again when it meets rows of a layout it does not know.
func (c *Ctl) LoadSchema() error {
	if c.Features()&FeatColumns == 0 {
		c.Schema = c.created
		return nil
	}
	s, err := c.ReadSchema()
	if err != nil {
		return fmt.Errorf("%w (the table has added columns)", err)
	}
	c.Schema = s
	return nil
}
