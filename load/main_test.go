package load

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (a
// producer that File did not stop, or a table's writer that Close did not
// close).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
