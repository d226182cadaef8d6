package reader_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (an
// idle strategy's waiter, or a writer's flusher or preparer a test did
// not close).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
