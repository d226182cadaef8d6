package archive

import (
	"context"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/internal/index"
)

// RetainBelow is the retention gate of table in database directory db
// from the archive's manifest, for a program without an Archiver (tickdb
// retain --after-archive): the number of the first segment the manifest
// does not list whole, so that writer.Options.RetainBelow deletes only
// segments the archive holds. A table the archive does not hold gets 0
// (nothing deleted); a manifest of another table of that name (another
// table id) is an error.
func RetainBelow(ctx context.Context, c *Client, db, table string) (uint64, error) {
	ctl, err := index.OpenCtl(filepath.Join(db, table, format.CtlName), nil)
	if err != nil {
		return 0, fmt.Errorf("archive: table %s: %w", table, err)
	}
	id := hex.EncodeToString(ctl.TableID[:])
	ctl.Close()
	m, err := ReadManifest(ctx, c, table)
	if err != nil || m == nil {
		return 0, err
	}
	if m.TableID != id {
		return 0, fmt.Errorf("archive: %s holds another table named %s (table id %s; this one is %s)", c.loc, table, m.TableID, id)
	}
	if len(m.Segments) == 0 {
		return m.FirstSeq >> m.SegShift, nil
	}
	return m.EndSeq >> m.SegShift, nil // a partial last segment is not archived whole
}
