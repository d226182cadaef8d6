package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// ManifestName is a table's manifest object, under PREFIX/TABLE/.
const ManifestName = "manifest.json"

// manifestFormat is the manifest's format version.
const manifestFormat = 1

// Manifest says what the archive holds of one table. It is written after
// every object it lists, so a reader that trusts it finds them all.
type Manifest struct {
	Format  int    `json:"format"`
	Table   string `json:"table"`
	TableID string `json:"table_id"` // 32 hex digits, the ctl's
	// Geometry, from the table's ctl.
	SegShift    uint   `json:"seg_shift"`
	StrideShift uint   `json:"stride_shift"`
	RowSize     int    `json:"row_size"`
	LateWindow  int64  `json:"late_window,omitempty"`
	Features    uint64 `json:"features,omitempty"`
	// Ctl is the key of a copy of the table's control file (page 0: its
	// first schema and geometry); Schema of its schema file, once columns
	// were added ("" before).
	Ctl    string `json:"ctl"`
	Schema string `json:"schema,omitempty"`
	// Sym is sym.dat in pieces: concatenated, bytes [0, SymBytes), header
	// included, holding SymCount entries.
	Sym      []SymPiece `json:"sym"`
	SymCount uint64     `json:"sym_count"`
	SymBytes uint64     `json:"sym_bytes"`
	// Segments in segment order, each a whole segment or the first rows of
	// the table's last one; they cover rows [FirstSeq, EndSeq) without a
	// gap.
	Segments []Segment `json:"segments"`
	FirstSeq uint64    `json:"first_seq"`
	EndSeq   uint64    `json:"end_seq"`
	// LastTs is the newest ts of rows [0, EndSeq) (ctl's lastTs for them).
	LastTs  int64     `json:"last_ts"`
	Updated time.Time `json:"updated"`
}

// SymPiece is sym.dat bytes [From, To), in object Key.
type SymPiece struct {
	Key  string `json:"key"`
	From uint64 `json:"from"`
	To   uint64 `json:"to"`
}

// Segment is one archived compressed segment: rows [FirstSeq, EndSeq).
type Segment struct {
	Seg      uint64 `json:"seg"`
	FirstSeq uint64 `json:"first_seq"`
	EndSeq   uint64 `json:"end_seq"`
	MinTs    int64  `json:"min_ts"`
	MaxTs    int64  `json:"max_ts"`
	Version  int    `json:"version"` // compressed format version (FORMAT §10)
	Key      string `json:"key"`     // the .zdat object
	Size     int64  `json:"size"`
	// TsIdx holds the time index entries of its rows: entry k (row k*K,
	// K = 2^StrideShift) for k in [TsFirst, TsFirst+TsCount), 8 bytes each.
	TsIdx   string `json:"ts_idx"`
	TsFirst uint64 `json:"ts_first"`
	TsCount uint64 `json:"ts_count"`
	// Late holds its late rows' late.idx entries (32 bytes each), in seq
	// order; "" when it has none.
	Late      string `json:"late,omitempty"`
	LateCount uint64 `json:"late_count,omitempty"`
	// Parquet are the Parquet objects of its rows (Options.Parquet),
	// keys relative to the location's prefix.
	Parquet []string `json:"parquet,omitempty"`
}

// Rows is how many rows the segment holds.
func (s Segment) Rows() uint64 { return s.EndSeq - s.FirstSeq }

// SegKey is the object key of rows [first, end) of a table's segment.
func SegKey(table string, first, end uint64, ext string) string {
	return fmt.Sprintf("%s/seg/%020d-%020d.%s", table, first, end, ext)
}

// SymKey is the object key of sym.dat bytes [from, to).
func SymKey(table string, from, to uint64) string {
	return fmt.Sprintf("%s/sym/%012d-%012d", table, from, to)
}

// ReadManifest reads table's manifest; (nil, nil) when it has none.
func ReadManifest(ctx context.Context, c *Client, table string) (*Manifest, error) {
	b, err := c.Get(ctx, table+"/"+ManifestName)
	if errors.Is(err, ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	m := new(Manifest)
	if err := json.Unmarshal(b, m); err != nil {
		return nil, fmt.Errorf("archive: manifest of %s at %s: %w", table, c.loc.Key(table, ManifestName), err)
	}
	if m.Format != manifestFormat {
		return nil, fmt.Errorf("archive: manifest of %s at %s: format %d, this build reads %d", table, c.loc.Key(table, ManifestName), m.Format, manifestFormat)
	}
	return m, m.check()
}

// check is what a reader relies on: segments in order, without a gap.
func (m *Manifest) check() error {
	next := m.FirstSeq
	for i, s := range m.Segments {
		if s.FirstSeq != next || s.EndSeq <= s.FirstSeq || s.FirstSeq>>m.SegShift != s.Seg || (s.EndSeq-1)>>m.SegShift != s.Seg {
			return fmt.Errorf("archive: manifest of %s: segment %d (entry %d) holds rows [%d, %d), want from %d within the segment", m.Table, s.Seg, i, s.FirstSeq, s.EndSeq, next)
		}
		next = s.EndSeq
	}
	if next != m.EndSeq {
		return fmt.Errorf("archive: manifest of %s: segments end at row %d, the manifest says %d", m.Table, next, m.EndSeq)
	}
	return nil
}

// writeManifest stores m as table's manifest.
func writeManifest(ctx context.Context, c *Client, m *Manifest) error {
	if err := m.check(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	return c.Put(ctx, m.Table+"/"+ManifestName, b)
}

// Tables lists the tables archived at the client's location: the
// directories that hold a manifest.
func Tables(ctx context.Context, c *Client) ([]string, error) {
	dirs, err := c.ListDirs(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, d := range dirs {
		if _, err := c.Size(ctx, d+"/"+ManifestName); err == nil {
			out = append(out, d)
		} else if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	return out, nil
}
