package routed

import (
	"testing"

	"github.com/slotmeta/slotmeta/client"
)

// routesLedBy is a route table of revision rev: every slot in group 1,
// led by node in term.
func routesLedBy(rev, node, term int64) *client.Routes {
	r := &client.Routes{Revision: rev}
	for s := range slotCount {
		r.HashSlots = append(r.HashSlots, client.HashSlotRoute{HashSlot: s, Group: 1, LeaderNode: &node, LeaderTerm: &term})
	}
	return r
}

// TestViewKeepsTheNewestLeader: a leader is replaced only by one of a
// higher term — a hint (no term) is believed, and a late table of the term
// it replaced does not undo it; an older route revision changes nothing.
func TestViewKeepsTheNewestLeader(t *testing.T) {
	v := newView()
	v.learnRoutes(routesLedBy(2, 1, 5))
	if node, g := v.load().leaderOf(7); node != 1 || g != 1 {
		t.Fatalf("leader %d of group %d", node, g)
	}
	v.learnLeader(1, 2, 0, true) // not_leader, leader_hint 2
	v.learnRoutes(routesLedBy(2, 1, 5))
	if node, _ := v.load().leaderOf(7); node != 2 {
		t.Fatalf("a table of term 5 undid the hint: node %d", node)
	}
	v.learnLeader(1, 3, 4, false) // an answer from before the election
	if node, _ := v.load().leaderOf(7); node != 2 {
		t.Fatalf("an older term replaced the leader: node %d", node)
	}
	v.learnRoutes(routesLedBy(2, 3, 6))
	if l := v.load().leaders[1]; l.node != 3 || l.term != 6 {
		t.Fatalf("a newer term was not taken: %+v", l)
	}
	v.learnRoutes(routesLedBy(1, 1, 9))
	if l := v.load().leaders[1]; l.node != 3 || v.load().revision != 2 {
		t.Fatalf("an older revision's table was taken: %+v, revision %d", l, v.load().revision)
	}
}
