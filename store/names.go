package store

import "fmt"

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
