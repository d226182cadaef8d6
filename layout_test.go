package tickdb_test

import (
	"go/build"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const modulePath = "github.com/tickdb/tickdb"

// engineLayers is DESIGN "Packages" as data: the engine's packages by
// layer. A package imports only packages of lower layers (or, within one
// layer, the ones listed in sameLayer); the harness under
// internal/harness may import anything but cmd, and nothing of the engine
// imports the harness. Only cmd/tickdb and examples stand above them all.
var engineLayers = [][]string{
	{"store", "internal/mmap", "internal/codec", "internal/textfmt", "internal/enum", "lineproto"},
	{"internal/format", "internal/vfs"},
	{"internal/index", "internal/cseg"},
	{"reader", "writer"},
	{"query"},
	{"export"},
	{"archive"},
	{"ingest"},
	{"load"},
}

// TestImportLayers checks every non-test import of the module's packages
// against engineLayers, so an engine package that reaches up (or into the
// harness) fails go test, not a reviewer's eye.
func TestImportLayers(t *testing.T) {
	layer := map[string]int{}
	for i, pkgs := range engineLayers {
		for _, p := range pkgs {
			layer[p] = i
		}
	}
	dirs := packageDirs(t)
	seen := map[string]bool{}
	for _, dir := range dirs {
		pkg, err := build.ImportDir(dir, 0)
		if err != nil {
			if _, ok := err.(*build.NoGoError); ok {
				continue
			}
			t.Fatalf("%s: %v", dir, err)
		}
		rel := filepath.ToSlash(dir)
		seen[rel] = true
		top := rel == "cmd/tickdb" || strings.HasPrefix(rel, "examples")
		harness := strings.HasPrefix(rel, "internal/harness/")
		if _, ok := layer[rel]; !ok && !top && !harness {
			t.Errorf("%s is in no layer of engineLayers (layout_test.go): put it in one, or under internal/harness", rel)
			continue
		}
		for _, imp := range pkg.Imports {
			if !strings.HasPrefix(imp, modulePath+"/") {
				continue
			}
			dep := strings.TrimPrefix(imp, modulePath+"/")
			switch {
			case top:
				// the top: imports anything
			case harness:
				if strings.HasPrefix(dep, "cmd/") {
					t.Errorf("%s imports %s: the harness does not import commands", rel, dep)
				}
			case strings.HasPrefix(dep, "internal/harness/"):
				t.Errorf("%s imports %s: the engine never imports the harness", rel, dep)
			default:
				li := layer[rel]
				lj, ok := layer[dep]
				if !ok {
					t.Errorf("%s imports %s, which is in no layer", rel, dep)
					continue
				}
				if lj >= li {
					t.Errorf("%s (layer %d) imports %s (layer %d): imports go one way, to lower layers (docs/DESIGN.md, Packages)", rel, li, dep, lj)
				}
			}
		}
	}
	for p := range layer {
		if !seen[p] {
			t.Errorf("engineLayers names %s, which is not a package of the module", p)
		}
	}
}

// packageDirs lists the module's directories holding Go files, relative to
// the root, skipping testdata, node_modules and the nested modules.
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (name == "testdata" || name == "node_modules" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // bench/, sql/: modules of their own
			}
		}
		matches, _ := filepath.Glob(filepath.Join(path, "*.go"))
		if len(matches) > 0 && path != "." {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(dirs)
	return dirs
}
