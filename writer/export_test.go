package writer

// SetCompactHook makes compaction call f after each numbered step of
// compacting a segment (tests kill the process there).
func SetCompactHook(f func(seg uint64, step int)) { compactHook = f }
