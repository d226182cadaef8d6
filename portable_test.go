package tickdb_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// portablePackages are the packages that must build off Linux: the
// readers and what they stand on, the writer (whose Open returns
// ErrUnsupported there) and the CLI without its writing commands
// (docs/DESIGN.md, Platforms). .ci/run cross-builds the same list.
var portablePackages = []string{
	".", "./store", "./internal/mmap", "./internal/format", "./internal/codec", "./internal/index", "./internal/cseg", "./reader", "./lineproto", "./query", "./export", "./writer", "./cmd/tickdb",
}

// TestPortableBuild cross-builds the read side for darwin and windows, so
// a Linux-only call that slips into it fails go test on Linux, not only a
// user's build on a Mac. It reuses the build cache: seconds after the
// first run.
func TestPortableBuild(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go tool: %v", err)
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []struct{ goos, goarch string }{
		{"darwin", "arm64"}, {"darwin", "amd64"}, {"windows", "amd64"},
	} {
		t.Run(target.goos+"_"+target.goarch, func(t *testing.T) {
			args := append([]string{"build"}, portablePackages...)
			cmd := exec.Command(goTool, args...)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "GOOS="+target.goos, "GOARCH="+target.goarch, "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("GOOS=%s GOARCH=%s go build %v: %v\n%s", target.goos, target.goarch, portablePackages, err, out)
			}
		})
	}
}
