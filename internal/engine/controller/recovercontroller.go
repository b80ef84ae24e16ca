package controller

import (
	"fmt"
	"slices"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Recovery of the controller group itself (issue 29). The controller's
// state is the routing and the placement of every group: a controller
// group that lost a majority of its voters for good takes the whole
// cluster's management with it. It is rebuilt offline from its most
// advanced surviving replica (package cluster, `slotmeta recover-controller`):
// that replica's state, applied up to the commit it knew, is imported as a
// snapshot with the survivor as the group's only voter (dragonboat's
// tools.ImportSnapshot; the lost voters recorded as removed members), and
// the survivor's node, once it leads, proposes RecoverController: the
// commands it had logged past that commit are applied — as a group's
// recovery applies its log's tail, and etcd's --force-new-cluster commits
// its whole log: a command acknowledged by the lost majority that the
// survivor held is kept — and the lost nodes are removed: every node
// drops their Raft messages and refuses their peer requests, a lost node
// that comes back refuses to start, and their replicas are moved off them
// (a group that lost its quorum with them is recovered as any other).

// MaxControllerTail bounds the logged commands a controller recovery
// applies; a survivor that logged more past its commit is refused (its
// commit then lags far behind: recover from another survivor).
const MaxControllerTail = 10_000

// RecoverController records a recovery of the controller group from node
// Node's replica, imported at Index (the commit it knew; Term its term).
// Tail are the commands (encoded envelopes) it had logged past Index, in
// log order; Lost the nodes declared lost for good. ID makes it apply once:
// the survivor proposes it until it is recorded.
type RecoverController struct {
	ID    string             `json:"id"`
	Node  slotstore.NodeID   `json:"node"`
	Index uint64             `json:"index"`
	Term  uint64             `json:"term"`
	Lost  []slotstore.NodeID `json:"lost"`
	Tail  [][]byte           `json:"tail,omitempty"`
}

// ControllerRecovery is one controller recovery as recorded.
type ControllerRecovery struct {
	ID    string             `json:"id"`
	Node  slotstore.NodeID   `json:"node"`
	Index uint64             `json:"index"`
	Term  uint64             `json:"term"`
	Lost  []slotstore.NodeID `json:"lost"`
	// TailApplied and TailRefused count the logged commands applied past
	// Index (refused ones are answered as they would have been).
	TailApplied int   `json:"tail_applied"`
	TailRefused int   `json:"tail_refused"`
	AtMs        int64 `json:"at_ms"`
}

// ControllerRecovered is the recorded controller recovery id, if any.
func (s *State) ControllerRecovered(id string) (ControllerRecovery, bool) {
	for _, r := range s.ControllerRecoveries {
		if r.ID == id {
			return r, true
		}
	}
	return ControllerRecovery{}, false
}

func (c *RecoverController) validate() error {
	switch {
	case c.ID == "" || c.Node == 0 || c.Index == 0:
		return fmt.Errorf("controller: a controller recovery needs an id, a node and an index")
	case len(c.Lost) == 0:
		return fmt.Errorf("controller: a controller recovery names the lost nodes")
	case slices.Contains(c.Lost, c.Node):
		return fmt.Errorf("controller: node %d recovers the controller and is named lost", c.Node)
	case len(c.Tail) > MaxControllerTail:
		return fmt.Errorf("controller: %d logged commands past the commit, at most %d", len(c.Tail), MaxControllerTail)
	}
	return nil
}

func applyRecoverController(s *State, c *RecoverController, timeMs int64) Result {
	if r, ok := s.ControllerRecovered(c.ID); ok {
		return Result{OK: true, Message: fmt.Sprintf("controller recovery %s was recorded at %d", r.ID, r.AtMs)}
	}
	if err := c.validate(); err != nil {
		return refuse(slotstore.CodeInvalidArgument, "%v", err)
	}
	rec := ControllerRecovery{ID: c.ID, Node: c.Node, Index: c.Index, Term: c.Term, Lost: slices.Clone(c.Lost), AtMs: timeMs}
	for _, b := range c.Tail {
		inner, err := DecodeCommand(b)
		if err != nil || inner.RecoverController != nil {
			rec.TailRefused++
			continue
		}
		if apply(s, inner).OK {
			rec.TailApplied++
		} else {
			rec.TailRefused++
		}
	}
	for _, id := range c.Lost {
		if n, ok := s.Nodes[id]; ok {
			n.State = NodeRemoved
		}
	}
	s.ControllerRecoveries = appendBounded(s.ControllerRecoveries, rec, MaxRecoveries)
	return Result{OK: true, Message: fmt.Sprintf("controller recovered from node %d at index %d (%d logged commands applied past it, %d refused); nodes %v removed",
		c.Node, c.Index, rec.TailApplied, rec.TailRefused, c.Lost)}
}
