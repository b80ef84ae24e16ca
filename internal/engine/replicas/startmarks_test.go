package replicas

import (
	"errors"
	"os"
	"testing"
	"time"
)

// TestStartMarksBreakACrashLoop walks the marks through the lives of a
// node whose replica of shard 2 ends every process that replays it.
func TestStartMarksBreakACrashLoop(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Unix(1_800_000_000, 0)
	load := func() *startMarks {
		t.Helper()
		m, err := loadMarks(dir, "panic: not session managed, not empty")
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	files := func() int {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		return len(ents)
	}
	applied := func(got map[uint64]uint64) func(uint64) (uint64, bool) {
		return func(shard uint64) (uint64, bool) { a, ok := got[shard]; return a, ok }
	}

	// Life 1: both replicas replay at once; shard 1's settles, then the
	// process ends (shard 2's mark stays).
	m := load()
	if err := m.begin(1, 11, 10, t0); err != nil {
		t.Fatal(err)
	}
	if err := m.begin(2, 22, 5, t0); err != nil {
		t.Fatal(err)
	}
	m.settle(applied(map[uint64]uint64{1: 10, 2: 3}), t0.Add(time.Second))
	if files() != 1 {
		t.Fatalf("%d marks after shard 1 settled, want 1", files())
	}

	// Life 2: shard 2 is a suspect and replays alone: it waits for shard 1.
	m = load()
	if err := m.begin(1, 11, 10, t0); err != nil {
		t.Fatal(err)
	}
	if err := m.begin(2, 22, 5, t0); !errors.Is(err, errWaitAlone) {
		t.Fatalf("a suspect beside a replay: %v", err)
	}
	m.settle(applied(map[uint64]uint64{}), t0.Add(replayGrace)) // shard 1 replayed for the whole grace
	if err := m.begin(2, 22, 5, t0.Add(replayGrace)); err != nil {
		t.Fatalf("a suspect alone: %v", err)
	}

	// Life 3: it ended that process too, alone: not started again.
	m = load()
	var rc *ReplayCrashes
	if err := m.begin(2, 22, 5, t0); !errors.As(err, &rc) || rc.Crashes != 2 || rc.LastCrash == "" {
		t.Fatalf("a replica that ended two processes, the last alone: %v", err)
	}
	if err := m.begin(1, 11, 10, t0); err != nil {
		t.Fatalf("another replica: %v", err)
	}
	// Moved off the node: its data and its mark go; a clean close removes
	// the rest.
	m.drop(2)
	m.close()
	if files() != 0 {
		t.Fatalf("%d marks after a drop and a clean close", files())
	}
	if err := load().begin(2, 23, 1, t0); err != nil {
		t.Fatalf("a new replica of the shard: %v", err)
	}
}
