package lineproto

import (
	"errors"
	"fmt"
)

// The errors an Encoder reports at End: each is a line it cannot write so
// that it reads back as given. Errors from End wrap one of them with the
// name at fault; callers branch with errors.Is.
var (
	// ErrNoField: the line has no field. The line protocol needs at least
	// one, and tickdb, like InfluxDB, rejects a line with tags alone.
	ErrNoField = errors.New("lineproto: a line needs at least one field")
	// ErrName: an empty measurement, key or tag value, or a measurement
	// starting with '#' (a comment line) or a tab (skipped as a blank).
	ErrName = errors.New("lineproto: name cannot be written")
	// ErrOrder: a tag after a field; tags come first.
	ErrOrder = errors.New("lineproto: tag after a field")
)

// nameError names the part of the line at fault. It runs only on bad
// input, so its fmt call costs the good lines nothing.
func nameError(err error, what, name, why string) error {
	if name == "" {
		return fmt.Errorf("%w: %s %s", err, what, why)
	}
	return fmt.Errorf("%w: %s %q %s", err, what, name, why)
}
