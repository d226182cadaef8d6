package store

import (
	"fmt"
	"path/filepath"
)

// On-disk contract: file names, magics and versions. Changing any of these
// needs a format version bump and a line in docs/FORMAT.md's history table.
const (
	// FormatVersion is written in every file header.
	FormatVersion = 1

	// BlockSize is the header size of every file and the O_DIRECT unit.
	BlockSize = 4096

	CtlName     = "ctl"      // schema + published index words
	SymName     = "sym.dat"  // symbol dictionary
	TimeIdxName = "ts.idx"   // sparse time index
	PostName    = "post.idx" // per-symbol postings
	LockName    = "LOCK"     // writer lock (flock), holds the writer's pid

	MagicCtl  = "TICKCTL\x00"
	MagicSym  = "TICKSYM\x00"
	MagicTime = "TICKTSI\x00"
	MagicPost = "TICKPST\x00"
	MagicSeg  = "TICKSEG\x00" // durable segment
	MagicLive = "TICKLIV\x00" // live (tmpfs) segment slot
)

// SegName is the durable segment file name for segment n.
func SegName(n uint64) string { return fmt.Sprintf("seg-%010d.dat", n) }

// SegPath is the durable segment path for segment n of the table at dir.
func SegPath(dir string, n uint64) string { return filepath.Join(dir, SegName(n)) }

// ZSegName is the compressed segment file name for segment n (package
// cseg's format), which replaces SegName(n) once compacted.
func ZSegName(n uint64) string { return fmt.Sprintf("seg-%010d.zdat", n) }

// ZSegPath is the compressed segment path for segment n of the table at dir.
func ZSegPath(dir string, n uint64) string { return filepath.Join(dir, ZSegName(n)) }

// SlotName is the live segment slot file name for slot i.
func SlotName(i int) string { return fmt.Sprintf("slot-%02d.live", i) }

// ValidTableName reports whether name can be a table directory: 1..128
// bytes of letters, digits, '_', '-' and '.', not starting with '.'.
func ValidTableName(name string) error {
	if name == "" || len(name) > 128 || name[0] == '.' {
		return fmt.Errorf("%w: table name %q must be 1..128 bytes and not start with '.'", ErrSchema, name)
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return fmt.Errorf("%w: table name %q: byte %q at %d is not a letter, digit, '_', '-' or '.'", ErrSchema, name, c, i)
		}
	}
	return nil
}
