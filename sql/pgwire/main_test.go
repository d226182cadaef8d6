package pgwire

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: a
// connection the server did not close, a hang-up watcher not stopped.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
