package controller

import (
	"encoding/json"
	"fmt"
	"sort"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/routing"
)

// commandVersion is the "v" of every controller command.
const commandVersion = 1

// Command is the JSON envelope of a controller command: exactly one body is set.
type Command struct {
	V         int        `json:"v"`
	TimeMs    int64      `json:"time_ms"`
	Bootstrap *Bootstrap `json:"bootstrap,omitempty"`
}

// Bootstrap founds the cluster: its nodes, the first HashToGroup table and
// the initial placement of every group. Only the first one applies; a later
// one is answered with the cluster as it was founded.
type Bootstrap struct {
	ClusterID         string `json:"cluster_id"`
	GroupCount        int    `json:"group_count"`
	ReplicationFactor int    `json:"replication_factor"`
	Nodes             []Node `json:"nodes"`
}

// Result is the JSON answer of a controller command.
type Result struct {
	OK      bool   `json:"ok"`
	Message string `json:"message,omitempty"`
}

// EncodeCommand encodes c with the current version.
func EncodeCommand(c Command) ([]byte, error) {
	c.V = commandVersion
	return json.Marshal(c)
}

// DecodeCommand decodes and checks the envelope.
func DecodeCommand(b []byte) (Command, error) {
	var c Command
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("controller: malformed command: %w", err)
	}
	if c.V != commandVersion {
		return c, fmt.Errorf("controller: unknown command version %d", c.V)
	}
	if c.Bootstrap == nil {
		return c, fmt.Errorf("controller: command has no body")
	}
	return c, nil
}

// Validate checks a bootstrap request before it is proposed or applied.
func (b *Bootstrap) Validate() error {
	if b.ClusterID == "" {
		return fmt.Errorf("controller: empty cluster id")
	}
	if b.GroupCount < 1 || b.GroupCount > slotstore.HashSlotCount {
		return fmt.Errorf("controller: group count %d outside 1..%d", b.GroupCount, slotstore.HashSlotCount)
	}
	if len(b.Nodes) == 0 {
		return fmt.Errorf("controller: no nodes")
	}
	if b.ReplicationFactor < 1 {
		return fmt.Errorf("controller: replication factor %d", b.ReplicationFactor)
	}
	seen := map[slotstore.NodeID]bool{}
	for _, n := range b.Nodes {
		if n.ID == 0 || seen[n.ID] {
			return fmt.Errorf("controller: node id %d is zero or repeated", n.ID)
		}
		if n.RaftAddr == "" {
			return fmt.Errorf("controller: node %d has no raft address", n.ID)
		}
		seen[n.ID] = true
	}
	return nil
}

// apply applies c to s at Raft index; it returns the command's result.
func apply(s *State, c Command) Result {
	switch {
	case c.Bootstrap != nil:
		return applyBootstrap(s, c.Bootstrap, c.TimeMs)
	}
	return Result{Message: "empty command"}
}

func applyBootstrap(s *State, b *Bootstrap, timeMs int64) Result {
	if s.Bootstrapped {
		return Result{OK: false, Message: "already bootstrapped as " + s.ClusterID}
	}
	if err := b.Validate(); err != nil {
		return Result{Message: err.Error()}
	}
	table, err := routing.InitialTable(b.GroupCount)
	if err != nil {
		return Result{Message: err.Error()}
	}
	nodes := append([]Node(nil), b.Nodes...)
	sort.Slice(nodes, func(i, j int) bool { return nodes[i].ID < nodes[j].ID })
	rf := min(b.ReplicationFactor, len(nodes))
	var maxID slotstore.NodeID
	for i := range nodes {
		n := nodes[i]
		n.State = NodeActive
		n.JoinedAtMs = timeMs
		if len(n.Roles) == 0 {
			n.Roles = []string{"controller", "data"}
		}
		s.Nodes[n.ID] = &n
		maxID = max(maxID, n.ID)
	}
	groups := table.Groups()
	s.HashToGroup = append([]slotstore.GroupID(nil), groups[:]...)
	s.RouteRevision = table.Revision()
	// Placement: group g takes rf consecutive nodes starting at (g-1) mod N,
	// so replicas and initial preferred leaders spread evenly.
	for g := 1; g <= b.GroupCount; g++ {
		grp := &Group{ID: slotstore.GroupID(g), Peers: map[slotstore.NodeID]uint64{}, ConfigEpoch: 1, PreferredSetAtMs: timeMs}
		for i := 0; i < rf; i++ {
			n := nodes[(g-1+i)%len(nodes)]
			grp.Peers[n.ID] = uint64(n.ID) // initial replicas use the node id
		}
		grp.PreferredLeader = nodes[(g-1)%len(nodes)].ID
		s.Groups[grp.ID] = grp
	}
	s.ClusterID = b.ClusterID
	s.ReplicationFactor = rf
	s.InitialGroupCount = b.GroupCount
	s.NextReplicaID = uint64(maxID) + 1
	s.Bootstrapped = true
	return Result{OK: true}
}
