package main

import (
	"bytes"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/lni/dragonboat/v4"
)

// TestEngineErrorsLogOnOneLine: the engine's errors, made with
// cockroachdb/errors, carry a stack that slog's text handler printed inside
// err="…" (%+v). The line keeps the message and what it wraps, not frames.
func TestEngineErrorsLogOnOneLine(t *testing.T) {
	var out bytes.Buffer
	log := newLogger(&out, slog.LevelInfo)
	wrapped := fmt.Errorf("replicas: start group 7 replica 3: %w", dragonboat.ErrReplicaRemoved)
	log.Error("start group replica", "group", 7, "err", wrapped, "n", 2)
	log.With("cause", dragonboat.ErrReplicaRemoved).WithGroup("g").Warn("grouped", "err", dragonboat.ErrReplicaRemoved)

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %d:\n%s", len(lines), out.String())
	}
	if want := `err="replicas: start group 7 replica 3: node removed" n=2`; !strings.Contains(lines[0], want) {
		t.Errorf("first line lacks %s:\n%s", want, lines[0])
	}
	if want := `cause="node removed" g.err="node removed"`; !strings.Contains(lines[1], want) {
		t.Errorf("second line lacks %s:\n%s", want, lines[1])
	}
	if strings.Contains(out.String(), `\n`) || strings.Contains(out.String(), ".go:") {
		t.Errorf("a stack was logged:\n%s", out.String())
	}
	// Without it, slog prints the stack (what the log showed before).
	var before bytes.Buffer
	slog.New(slog.NewTextHandler(&before, nil)).Error("x", "err", dragonboat.ErrReplicaRemoved)
	if !strings.Contains(before.String(), ".go:") {
		t.Errorf("the engine's error logged without the handler carries no stack any more (this test proves nothing): %s", before.String())
	}
}
