package controller

import (
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestTaskStepsDoNotFlushTheDecisionLog: a full decision log drops its
// oldest task step while task steps hold more than half of it, else its
// oldest decision — a long task's steps (a merge writes hundreds) no
// longer push every reconciler and balancer decision out within seconds.
func TestTaskStepsDoNotFlushTheDecisionLog(t *testing.T) {
	var log []Decision
	for i := range MaxDecisions {
		log = appendDecision(log, Decision{AtMs: int64(i), Kind: slotstore.DecisionBalance})
	}
	for i := range 2 * MaxDecisions {
		log = appendDecision(log, Decision{AtMs: int64(MaxDecisions + i), Kind: slotstore.DecisionTask})
	}
	tasks := 0
	for _, d := range log {
		if d.Kind == slotstore.DecisionTask {
			tasks++
		}
	}
	if len(log) != MaxDecisions || tasks != MaxTaskDecisions {
		t.Fatalf("%d decisions, %d of them task steps", len(log), tasks)
	}
	// The newest balancer decisions stayed; the newest task steps too.
	if first, last := log[0], log[len(log)-1]; first.Kind != slotstore.DecisionBalance || first.AtMs != int64(MaxDecisions-MaxTaskDecisions) ||
		last.AtMs != int64(3*MaxDecisions-1) {
		t.Fatalf("kept %+v … %+v", first, last)
	}
}

// TestOldDecisionsGo: a decision older than MaxDecisionAge before the
// newest leaves the log, by the commands' own times.
func TestOldDecisionsGo(t *testing.T) {
	var log []Decision
	day := (24 * time.Hour).Milliseconds()
	for i := range 10 {
		log = appendDecision(log, Decision{AtMs: int64(i) * day, Kind: slotstore.DecisionBalance})
	}
	// Days 0 and 1 are more than seven days before day 9.
	if len(log) != 8 || log[0].AtMs != 2*day {
		t.Fatalf("kept %d decisions from day %d", len(log), log[0].AtMs/day)
	}
	log = appendDecision(log, Decision{AtMs: 100 * day})
	if len(log) != 1 {
		t.Fatalf("a decision 91 days later keeps %d", len(log))
	}
}
