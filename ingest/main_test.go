package ingest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (an event
// loop, the writer goroutine or a table's flusher that Close did not stop).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
