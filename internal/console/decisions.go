package console

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// decisionPages serves the decision log, newest first.
type decisionPages struct{ *console }

// decisionRowsPerPage is how many (folded) rows one page of the decision
// log shows.
const decisionRowsPerPage = 100

// decisions is the page of the log below sequence number before (0: from
// the newest).
func (c decisionPages) decisions(before uint64) DecisionsProps {
	ds := c.src.Decisions()
	if before != 0 {
		keep := ds[:0:0]
		for _, d := range ds {
			if d.Seq < before {
				keep = append(keep, d)
			}
		}
		ds = keep
	}
	p := DecisionsProps{Now: c.now(), Decisions: foldDecisions(ds), Before: before}
	if len(p.Decisions) > decisionRowsPerPage {
		p.Decisions = p.Decisions[:decisionRowsPerPage]
		last := p.Decisions[len(p.Decisions)-1]
		p.Older = last.Seq
		if n := len(last.Folded); n > 0 {
			p.Older = last.Folded[n-1].Seq
		}
	}
	return p
}

// beforeParam is ?before= of the decision log's pages (0: absent or bad).
func beforeParam(r *http.Request) uint64 {
	n, _ := strconv.ParseUint(r.URL.Query().Get("before"), 10, 64)
	return n
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
	c.full(w, r, "Decision log", "decisions", DecisionsBody(c.decisions(beforeParam(r))))
}

func (c decisionPages) decisionsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, DecisionTable(c.decisions(beforeParam(r))))
}

// beforeQuery is the query of the page below sequence number n ("" for 0).
func beforeQuery(n uint64) string {
	if n == 0 {
		return ""
	}
	return "?before=" + strconv.FormatUint(n, 10)
}
