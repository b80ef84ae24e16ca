package chaos

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/anishathalye/porcupine"
)

// checkTimeout bounds one porcupine check; a check that times out fails the
// schedule (it proves nothing). visTimeout bounds the second, verbose pass
// over a history found illegal, which collects the partial linearizations
// the visualization shows (a pass cut short shows fewer of them).
const (
	checkTimeout = 60 * time.Second
	visTimeout   = 15 * time.Second
)

// linearizable checks a history against a model. It returns "ok", or what
// went wrong: for a violation, porcupine's visualization is written to a
// file (in CHAOS_VIS_DIR, else the temp dir) whose path is in the answer.
func linearizable(name string, seed int64, m porcupine.NondeterministicModel, ops []porcupine.Operation) (verdict string, ok bool) {
	model := m.ToModel()
	switch porcupine.CheckOperationsTimeout(model, ops, checkTimeout) {
	case porcupine.Ok:
		return "ok", true
	case porcupine.Unknown:
		return fmt.Sprintf("checker timed out after %v", checkTimeout), false
	}
	_, info := porcupine.CheckOperationsVerbose(model, ops, visTimeout)
	dir := os.Getenv("CHAOS_VIS_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("violation-%s-seed%d-%d.html", name, seed, time.Now().UnixNano()))
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return fmt.Sprintf("NOT linearizable (visualization failed: %v)", err), false
	}
	return "NOT linearizable, visualization: " + path, false
}
