package format

import (
	"fmt"
	"path/filepath"
)

// On-disk contract: file names, magics and versions. Changing any of these
// needs a format version bump and a line in docs/FORMAT.md's history table.
const (
	// FormatVersion is written in every file header but post.idx's.
	FormatVersion = 1
	// PostVersion1, PostVersion2 and PostVersion3 are post.idx's header
	// versions: data chunks of u64 entries, of 3-byte entries, and 3-byte
	// entries in blocks that grow from one 64-byte line (docs/FORMAT.md
	// §7). A new post.idx is version 3; a file of an older version keeps
	// its version.
	PostVersion1 = 1
	PostVersion2 = 2
	PostVersion3 = 3

	// BlockSize is the header size of every file and the O_DIRECT unit.
	BlockSize = 4096

	CtlName     = "ctl"      // schema + published index words
	SymName     = "sym.dat"  // symbol dictionary
	TimeIdxName = "ts.idx"   // sparse time index
	PostName    = "post.idx" // per-symbol postings
	LateIdxName = "late.idx" // rows stored late (inside the late window)
	LockName    = "LOCK"     // writer lock (flock), holds the writer's pid
	SchemaName  = "schema"   // the schema of a table that grew columns

	MagicCtl    = "TICKCTL\x00"
	MagicSym    = "TICKSYM\x00"
	MagicTime   = "TICKTSI\x00"
	MagicPost   = "TICKPST\x00"
	MagicSeg    = "TICKSEG\x00" // durable segment
	MagicLive   = "TICKLIV\x00" // live (tmpfs) segment slot
	MagicClu    = "TICKCLU\x00" // clustered hot copy of a sealed segment
	MagicLate   = "TICKLAT\x00" // late rows index
	MagicSchema = "TICKSCM\x00" // grown schema
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

// CluName is the clustered hot copy of segment n (in the live directory).
func CluName(n uint64) string { return fmt.Sprintf("seg-%010d.clu", n) }

// CluPath is the clustered hot copy path for segment n in live directory dir.
func CluPath(dir string, n uint64) string { return filepath.Join(dir, CluName(n)) }

// CluTmpSuffix ends the name a clustered copy is written under before it is
// renamed into place (CluName(n) + CluTmpSuffix).
const CluTmpSuffix = ".tmp"

// HotName is the hot copy of segment n (in the live directory): its
// durable file, byte for byte, in shared memory.
func HotName(n uint64) string { return fmt.Sprintf("seg-%010d.hot", n) }

// HotPath is the hot copy path for segment n in live directory dir.
func HotPath(dir string, n uint64) string { return filepath.Join(dir, HotName(n)) }

// ParseCluName returns n for a name CluName(n) (tmp false) or CluName(n) +
// CluTmpSuffix (tmp true); ok is false for any other name.
func ParseCluName(name string) (n uint64, tmp, ok bool) { return parseCopyName(name, CluName) }

// ParseHotName is ParseCluName for HotName.
func ParseHotName(name string) (n uint64, tmp, ok bool) { return parseCopyName(name, HotName) }

func parseCopyName(name string, format func(uint64) string) (n uint64, tmp, ok bool) {
	if len(name) > len(CluTmpSuffix) && name[len(name)-len(CluTmpSuffix):] == CluTmpSuffix {
		name, tmp = name[:len(name)-len(CluTmpSuffix)], true
	}
	ext := format(0)[len("seg-0000000000"):]
	if _, err := fmt.Sscanf(name, "seg-%010d"+ext, &n); err != nil || name != format(n) {
		return 0, false, false
	}
	return n, tmp, true
}

// SlotName is the live segment slot file name for slot i.
func SlotName(i int) string { return fmt.Sprintf("slot-%02d.live", i) }
