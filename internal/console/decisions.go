package console

import (
	"net/http"
	"strings"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// decisionPages serves the decision log, newest first.
type decisionPages struct{ *console }

func (c decisionPages) decisions() DecisionsProps {
	return DecisionsProps{Now: c.now(), Decisions: foldDecisions(c.src.Decisions())}
}

// foldDecisions orders ds newest first and folds each run of a task's
// phase steps (kind task, one group, one task kind: "split:copy→switch")
// into its newest row: a 32-slot split is a row, not 288 (issue 30).
func foldDecisions(ds []slotstore.Decision) []DecisionRow {
	out := make([]DecisionRow, 0, len(ds))
	taskOf := func(d slotstore.Decision) string {
		kind, _, _ := strings.Cut(string(d.Reason), ":")
		return kind
	}
	for i := len(ds) - 1; i >= 0; i-- {
		d := ds[i]
		if n := len(out); n > 0 && d.Kind == slotstore.DecisionTask {
			if last := &out[n-1]; last.Kind == slotstore.DecisionTask && last.Group == d.Group && taskOf(last.Decision) == taskOf(d) {
				last.Folded = append(last.Folded, d)
				continue
			}
		}
		out = append(out, DecisionRow{Decision: d})
	}
	return out
}

// leaderMatters says whether a decision's leader is one of its inputs
// (the reconciler's transfers and skips): elsewhere 0 is no fact, not a
// group without a leader.
func leaderMatters(d slotstore.Decision) bool {
	switch d.Kind {
	case slotstore.DecisionTransfer, slotstore.DecisionSkip, slotstore.DecisionTransferred, slotstore.DecisionTransferFailed:
		return true
	}
	return false
}

func (c decisionPages) decisionsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Decision log", "decisions", DecisionsBody(c.decisions()))
}

func (c decisionPages) decisionsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, DecisionTable(c.decisions()))
}
