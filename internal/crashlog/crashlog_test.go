package crashlog

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeepSaysWhatEndedTheLastProcess: a process that panics leaves its
// crash output in the directory; the next one is told its first line, and
// one after a clean end is told nothing.
func TestKeepSaysWhatEndedTheLastProcess(t *testing.T) {
	if dir := os.Getenv("CRASHLOG_CHILD_DIR"); dir != "" {
		if _, err := Keep(dir); err != nil {
			t.Fatal(err)
		}
		if os.Getenv("CRASHLOG_CHILD_PANIC") != "" {
			go func() { panic("replica 7 of group 3: damaged entry\nsecond line") }()
			select {}
		}
		return
	}
	dir := t.TempDir()
	child := func(panics bool) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKeepSaysWhatEndedTheLastProcess$")
		cmd.Env = append(os.Environ(), "CRASHLOG_CHILD_DIR="+dir)
		if panics {
			cmd.Env = append(cmd.Env, "CRASHLOG_CHILD_PANIC=1")
		}
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := child(true); err == nil || !strings.Contains(out, "damaged entry") {
		t.Fatalf("the child did not crash: %v\n%s", err, out)
	}
	last, err := Keep(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := "panic: replica 7 of group 3: damaged entry"; last != want {
		t.Fatalf("last crash %q, want %q", last, want)
	}
	if data, err := os.ReadFile(filepath.Join(dir, PrevFile)); err != nil || !strings.Contains(string(data), "goroutine") {
		t.Fatalf("the previous crash output is not kept whole: %v %q", err, data)
	}
	// A clean end leaves nothing to tell.
	if out, err := child(false); err != nil {
		t.Fatalf("the child failed: %v\n%s", err, out)
	}
	if last, err := Keep(dir); err != nil || last != "" {
		t.Fatalf("after a clean end: %q %v", last, err)
	}
}
