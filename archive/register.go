package archive

import (
	"context"

	"github.com/tickdb/tickdb/reader"
)

// Importing this package makes reader.Open take archive locations:
// reader.Open("s3://bucket/prefix", table, nil) is OpenReader with the
// defaults (the environment's credentials and server, the cache in
// DefaultCacheDir bounded by DefaultCacheBytes); the *reader.Reader's
// Close closes it all. OpenReader takes a context and options.
func init() {
	reader.RegisterOpener("s3", func(db, name string, _ *reader.Options) (*reader.Reader, error) {
		r, err := OpenReader(context.Background(), db, name, nil)
		if err != nil {
			return nil, err
		}
		return r.Reader, nil
	})
}
