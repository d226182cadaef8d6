package archive

import (
	"fmt"
	"path"
	"strings"
)

// Location is an archive's place: a bucket and a key prefix.
type Location struct {
	Bucket string
	Prefix string // no leading or trailing slash; "" for the bucket's root
}

// IsURL reports whether s names an archive (s3://...) rather than a
// directory.
func IsURL(s string) bool { return strings.HasPrefix(s, "s3://") }

// ParseLocation parses s3://bucket[/prefix].
func ParseLocation(s string) (Location, error) {
	rest, ok := strings.CutPrefix(s, "s3://")
	if !ok {
		return Location{}, fmt.Errorf("archive location %q: want s3://bucket/prefix", s)
	}
	bucket, prefix, _ := strings.Cut(rest, "/")
	if bucket == "" {
		return Location{}, fmt.Errorf("archive location %q: no bucket (want s3://bucket/prefix)", s)
	}
	prefix = strings.Trim(prefix, "/")
	if strings.Contains(prefix, "//") || strings.HasPrefix(prefix, ".") && (prefix == "." || prefix == ".." || strings.HasPrefix(prefix, "./") || strings.HasPrefix(prefix, "../")) {
		return Location{}, fmt.Errorf("archive location %q: bad prefix %q", s, prefix)
	}
	return Location{Bucket: bucket, Prefix: prefix}, nil
}

// String is the location as s3://bucket/prefix.
func (l Location) String() string {
	if l.Prefix == "" {
		return "s3://" + l.Bucket
	}
	return "s3://" + l.Bucket + "/" + l.Prefix
}

// Key is the object key of name under the location's prefix.
func (l Location) Key(name ...string) string {
	if l.Prefix == "" {
		return path.Join(name...)
	}
	return path.Join(append([]string{l.Prefix}, name...)...)
}

// Sub is the location of a sub-prefix (a node's).
func (l Location) Sub(name string) Location {
	return Location{Bucket: l.Bucket, Prefix: l.Key(name)}
}
