package controller

import (
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// RaftTiming is a node's Raft tick and election timeout, as it runs them.
// Every node reports its own (SetRaftTiming); a group's leader sizes its
// read lease by the shortest election timeout among the group's replicas
// (propose/lease.go, ADR 0012), so a node started with a shorter one — a
// mistake, or a rolling change of the flags — shortens the leases instead
// of breaking them.
type RaftTiming struct {
	RTTMs       uint64 `json:"rtt_ms"`
	ElectionRTT uint64 `json:"election_rtt"`
}

// TimingOf returns the timing of a Raft tick rtt and electionRTT ticks.
func TimingOf(rtt time.Duration, electionRTT uint64) RaftTiming {
	return RaftTiming{RTTMs: uint64(rtt / time.Millisecond), ElectionRTT: electionRTT}
}

// RTT is the tick.
func (t RaftTiming) RTT() time.Duration { return time.Duration(t.RTTMs) * time.Millisecond }

// SetRaftTiming records the Raft timing a node runs.
type SetRaftTiming struct {
	Node   slotstore.NodeID `json:"node"`
	Timing RaftTiming       `json:"timing"`
}

func applySetRaftTiming(s *State, r *SetRaftTiming) Result {
	if _, ok := s.Nodes[r.Node]; !ok {
		return refuse(slotstore.CodeNotFound, "node %d is not registered", r.Node)
	}
	if r.Timing.RTTMs == 0 || r.Timing.ElectionRTT == 0 {
		return refuse(slotstore.CodeInvalidArgument, "node %d reported no timing", r.Node)
	}
	if s.Timing == nil {
		s.Timing = map[slotstore.NodeID]RaftTiming{}
	}
	s.Timing[r.Node] = r.Timing
	return Result{OK: true}
}

// ReplicaNodes are the nodes that hold, or are about to hold, a replica of
// group g: its desired peers and the targets of its running replica moves
// (whose new replica becomes a voter before the move commits).
func (s *State) ReplicaNodes(g slotstore.GroupID) []slotstore.NodeID {
	grp, ok := s.Groups[g]
	if !ok {
		return nil
	}
	out := grp.PeerNodes()
	for _, t := range s.Tasks {
		if t.Kind == TaskReplicaMove && t.Group == g && t.To != 0 && (t.Status == TaskRunning || t.Status == TaskCancelling) {
			out = append(out, t.To)
		}
	}
	return out
}
