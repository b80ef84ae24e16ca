// Package crashlog keeps a process's crash output in its data directory, so
// that the next process on the same data can say why the last one ended.
//
// The Go runtime writes a fatal panic's message and stacks to stderr, which
// a supervisor may not keep. Keep sends a copy to <dir>/crash.log
// (runtime/debug.SetCrashOutput) after moving the previous process's copy
// to crash.prev.log, and returns what ended that process: the first line
// of its output that says so ("panic: …", "fatal error: …"). The node
// names it as the reason it does not start a replica that kept crashing
// the process as it replayed its log (replicas/startmarks.go, issue 51).
//
// Concurrency contract: Keep is called once, by main, before the node
// starts; the crash output is the process's.
package crashlog

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
)

// File names in the data directory.
const (
	File     = "crash.log"
	PrevFile = "crash.prev.log"
)

// maxLine bounds the line returned (a panic's value can be long).
const maxLine = 512

// Keep makes dir's crash.log this process's crash output, after moving
// the previous one to crash.prev.log, and returns the first line of the
// previous one that says what ended that process ("" when it ended
// without a crash, or none was kept).
func Keep(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("crashlog: %w", err)
	}
	cur, prev := filepath.Join(dir, File), filepath.Join(dir, PrevFile)
	if err := os.Rename(cur, prev); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("crashlog: keep the last crash output: %w", err)
	}
	last, err := LastCrash(prev)
	if err != nil {
		return "", err
	}
	f, err := os.OpenFile(cur, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o644)
	if err != nil {
		return last, fmt.Errorf("crashlog: %w", err)
	}
	defer f.Close() // SetCrashOutput keeps a duplicate of the descriptor
	if err := debug.SetCrashOutput(f, debug.CrashOptions{}); err != nil {
		return last, fmt.Errorf("crashlog: %w", err)
	}
	return last, nil
}

// LastCrash returns the first line of the crash output in path that says
// what ended the process ("" when there is none, or no file).
func LastCrash(path string) (string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("crashlog: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ") {
			if len(line) > maxLine {
				line = line[:maxLine] + "…"
			}
			return line, nil
		}
	}
	return "", nil // a line too long to scan says nothing either
}
