package console

import (
	"net/http"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// decisionPages serves the decision log, newest first.
type decisionPages struct{ *console }

func (c decisionPages) decisions() DecisionsProps {
	ds := c.src.Decisions()
	out := make([]slotstore.Decision, 0, len(ds))
	for i := len(ds) - 1; i >= 0; i-- {
		out = append(out, ds[i])
	}
	return DecisionsProps{Now: c.now(), Decisions: out}
}

func (c decisionPages) decisionsPage(w http.ResponseWriter, r *http.Request) {
	c.full(w, r, "Decision log", "decisions", DecisionsBody(c.decisions()))
}

func (c decisionPages) decisionsFragment(w http.ResponseWriter, r *http.Request) {
	c.render(w, r, http.StatusOK, DecisionTable(c.decisions()))
}
