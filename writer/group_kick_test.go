package writer

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestGroupKickWhileRunning: a kick with a delay that comes while the job
// runs (a checkpointer pass asking for another pass a moment later, say)
// is not lost: the job runs again.
func TestGroupKickWhileRunning(t *testing.T) {
	g, err := NewGroup(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	var runs atomic.Int32
	var j *job
	j = g.newJob(ckJob, func([]byte) time.Duration {
		if runs.Add(1) == 1 {
			j.kick(20 * time.Millisecond)
		}
		return -1
	}, nil)
	j.kick(0)
	for deadline := time.Now().Add(5 * time.Second); runs.Load() < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d runs, want 2: the delayed kick made while running was dropped", runs.Load())
		}
	}
}
