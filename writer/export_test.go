package writer

// SetCompactHook makes the writers opened with o call f after each
// numbered step of a compaction swap (tests kill the process there).
func SetCompactHook(o *Options, f func(seg uint64, step int)) { o.compactHook = f }
