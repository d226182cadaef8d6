package reader

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/tickdb/tickdb/internal/format"
	"github.com/tickdb/tickdb/store"
)

// Tables returns the names of the tables in database directory db, sorted:
// its subdirectories with a valid table name that hold a control file. A
// table being created (".<name>.tmp-*") is not one yet. A database
// directory that does not exist has no tables.
func Tables(db string) ([]string, error) {
	ents, err := os.ReadDir(db)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range ents {
		if !e.IsDir() || store.ValidTableName(e.Name()) != nil {
			continue
		}
		if Exists(db, e.Name()) {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// Exists reports whether table name of database db exists: its directory
// holds a control file.
func Exists(db, name string) bool {
	_, err := os.Stat(filepath.Join(db, name, format.CtlName))
	return err == nil
}
