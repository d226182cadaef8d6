package query_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind (a
// writer's flusher or preparer that a Close did not stop).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
