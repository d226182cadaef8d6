package main

import (
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress is a progress bar with rate and ETA on stderr when stderr is a
// terminal, and nothing otherwise (pipes and files get no bar).
type progress struct {
	bar *progressbar.ProgressBar
}

// newProgress starts a bar counting to total units (rows or bytes, as unit
// says: "rows" or "bytes"); total -1 means unknown.
func newProgress(stderr io.Writer, total int64, desc, unit string) *progress {
	if !isTerminal(stderr) {
		return &progress{}
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetItsString(unit),
		progressbar.OptionShowIts(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
	}
	if unit == "bytes" {
		opts = append(opts, progressbar.OptionShowBytes(true))
	}
	return &progress{bar: progressbar.NewOptions64(total, opts...)}
}

// add moves the bar n units on.
func (p *progress) add(n int64) {
	if p.bar != nil {
		_ = p.bar.Add64(n)
	}
}

// set moves the bar to n units.
func (p *progress) set(n int64) {
	if p.bar != nil {
		_ = p.bar.Set64(n)
	}
}

// done finishes and clears the bar.
func (p *progress) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
	}
}
