package slotstore

// NodeInfo is a member of the cluster as the controller records it.
type NodeInfo struct {
	ID         NodeID     `json:"id"`
	RaftAddr   string     `json:"raft_addr"`
	APIAddr    string     `json:"api_addr,omitempty"`
	PeerAddr   string     `json:"peer_addr,omitempty"`
	Roles      []NodeRole `json:"roles,omitempty"`
	State      NodeState  `json:"state,omitempty"`
	JoinedAtMs int64      `json:"joined_at_ms,omitempty"`
	// A drain's start and the replicas the node held then (its progress).
	DrainStartedAtMs int64 `json:"drain_started_at_ms,omitempty"`
	DrainReplicas    int   `json:"drain_replicas,omitempty"`
}

// NodeState is where a node is in its life in the cluster.
type NodeState string

// Node join states.
const (
	NodeJoining  NodeState = "joining"
	NodeActive   NodeState = "active"
	NodeDraining NodeState = "draining"
	NodeRemoved  NodeState = "removed"
)

// NodeRole is a role a node plays in the cluster.
type NodeRole string

// Node roles.
const (
	RoleController NodeRole = "controller" // a voter of the controller group
	RoleData       NodeRole = "data"       // may hold slot group replicas
)

// ClusterSummary is one node's view of the cluster.
type ClusterSummary struct {
	ClusterID        string `json:"cluster_id"`
	NodeID           NodeID `json:"node_id"` // the node that answered
	RouteRevision    uint64 `json:"route_revision"`
	ControllerLeader NodeID `json:"controller_leader"` // 0: unknown
	Nodes            int    `json:"nodes"`
	Groups           int    `json:"groups"`
	GroupsWithLeader int    `json:"groups_with_leader"`
	Ready            bool   `json:"ready"`
	NotReadyReason   string `json:"not_ready_reason,omitempty"`
	// ClusterVersion is the release line every node runs, as the
	// controller records it (package clusterversion: 0.1 until it records
	// one); Version is what the answering node runs.
	ClusterVersion Version `json:"cluster_version"`
	Version        Version `json:"version"`
	// ControllerApplied and ControllerDigest are this node's copy of the
	// controller state: the last command it applied and a hash of the
	// state there. Copies at one index must hash alike: compare the nodes'
	// (an upgrade's proof that the controller's replicas agree).
	ControllerApplied uint64 `json:"controller_applied"`
	ControllerDigest  string `json:"controller_digest"`
	// Disk is the answering node's data directory's filesystem as its disk
	// guard last measured it.
	Disk DiskUsage `json:"disk"`
	// Local is this node's own replicas as it sees them, without the
	// controller leader: what a surviving node still knows when the
	// controller lost its quorum.
	Local []LocalReplica `json:"local"`
	// Peers is who this node hears from over Raft, from its own transport
	// alone: every other registered node.
	Peers []PeerView `json:"peers"`
}

// PeerView is another node as the answering node's Raft transport sees it:
// how long ago a Raft message of any of its replicas arrived (-1: never
// since this process started) and whether the last Raft connection to it
// succeeded (absent: none tried yet).
type PeerView struct {
	Node       NodeID `json:"node"`
	HeardAgoMs int64  `json:"heard_ago_ms"`
	Connected  *bool  `json:"connected,omitempty"`
}

// DiskUsage is a node's data directory's filesystem: the space left to the
// node (its ballast counted as free), the filesystem's size, the reserve
// under which it is low — refusing the writes it would lead (no_space) —
// and full under half of it (its replicas store nothing others send).
type DiskUsage struct {
	Low          bool   `json:"low"`
	Full         bool   `json:"full"`
	FreeBytes    uint64 `json:"free_bytes"`
	TotalBytes   uint64 `json:"total_bytes"`
	ReserveBytes uint64 `json:"reserve_bytes"`
}

// LocalReplica is one of the answering node's replicas as that node sees
// it: its role, the leader it knows (0: none) and that leader's term, what
// it applied and logged.
type LocalReplica struct {
	Group        GroupID     `json:"group"`
	ReplicaID    uint64      `json:"replica_id"`
	Role         ReplicaRole `json:"role"`
	Leader       NodeID      `json:"leader"`
	Term         uint64      `json:"term"`
	AppliedIndex uint64      `json:"applied_index"`
	LogLast      uint64      `json:"log_last"`
}
