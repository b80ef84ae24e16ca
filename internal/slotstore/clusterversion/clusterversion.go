// Package clusterversion decides what a cluster mixing two releases may do.
//
// A rolling upgrade runs, for minutes, the previous binary and the new one
// side by side: replicas of one Raft group on different releases. A
// replicated command or field that the older binary does not know would be
// applied by the newer replicas and refused or misread by the older ones —
// the group's replicas would diverge. So, as in etcd (cluster version),
// CockroachDB (cluster version and its finalization) and TiKV/PD (feature
// gates), every such change is a Feature that names the Version it came
// in, and is proposed only once the cluster version allows it.
//
// The model:
//
//   - Every binary runs one Version (Binary) and keeps every older form it
//     can meet in a log or snapshot of a cluster at MinSupported or newer.
//   - Every node reports the version it runs to the controller leader with
//     its status; a node of a release before cluster versions reports none
//     and runs Base.
//   - The cluster version is recorded in the controller's replicated state.
//     The controller leader raises it (Next) once every registered node runs
//     a newer one, and never lowers it: from then on the features of that
//     version may be proposed, and a node older than it may not join
//     (CanJoin, asked when a node registers: cluster/join.go) or start (its
//     data directory's MIN_VERSION, below: cluster/minversion.go).
//   - Gate answers a feature the cluster version does not allow yet with a
//     failed_precondition naming the feature and both versions. Proposers
//     ask it before proposing; the controller's state machine asks it
//     again when it applies (so a proposal that raced the version's record
//     is refused alike by every replica that knows the feature).
//   - Each node keeps the cluster version it has seen in its data
//     directory (package cluster, MIN_VERSION): a binary older than that
//     refuses to start on it, before it opens or writes anything.
//
// The package is pure; it is safe for concurrent use.
package clusterversion

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Base is the release before cluster versions (v0.1): what a node that
// reports no version runs, and where a controller state that records no
// cluster version stands.
var Base = slotstore.Version{Major: 0, Minor: 1}

// Binary is the version this binary runs.
var Binary = slotstore.Version{Major: 0, Minor: 2}

// MinSupported is the oldest cluster version this binary can run in: it
// applies every command and reads every format of that version.
var MinSupported = Base

// Of is the cluster version a controller state records (Base when it
// records none).
func Of(recorded slotstore.Version) slotstore.Version {
	if recorded.IsZero() {
		return Base
	}
	return recorded
}

// Running is the version a node reports it runs (Base when it reports none).
func Running(reported slotstore.Version) slotstore.Version { return Of(reported) }

// Feature is a change to what replicas apply or store, available once the
// cluster version reaches Since.
type Feature struct {
	Name  string
	Since slotstore.Version
	// Covers names the commands, fields and formats it gates (for the
	// error, the CHANGELOG and the docs).
	Covers string
}

// The features since Base.
var (
	// StateChecks: a state check through a slot group's log (meta
	// CheckState, op 112), the controller's FenceReads and LiftReadFence
	// with Group.read_fence, and a replica move from a node to itself (a
	// rebuild in place), which an older controller refuses.
	StateChecks = Feature{Name: "state checks", Since: slotstore.Version{Major: 0, Minor: 2},
		Covers: "CheckState (op 112), FenceReads, LiftReadFence, a replica move from a node to itself"}
	// ClusterVersion: the controller command that records the cluster
	// version itself. Proposed only once every node runs its version, like
	// any other feature.
	ClusterVersion = Feature{Name: "cluster version", Since: slotstore.Version{Major: 0, Minor: 2},
		Covers: "SetClusterVersion"}
)

// Features lists every feature, oldest first.
var Features = []Feature{ClusterVersion, StateChecks}

// Gate returns nil when a cluster at cluster may use f, else a
// failed_precondition that names f and both versions (Refusal).
func Gate(cluster slotstore.Version, f Feature) error {
	if why := Refusal(cluster, f); why != "" {
		return &slotstore.Error{Code: slotstore.CodeFailedPrecondition, Message: why}
	}
	return nil
}

// Refusal says why a cluster at cluster may not use f yet ("" when it may).
func Refusal(cluster slotstore.Version, f Feature) string {
	cv := Of(cluster)
	if cv.AtLeast(f.Since) {
		return ""
	}
	return fmt.Sprintf("%s need cluster version %s; the cluster is at %s until every node runs %s or newer (a rolling upgrade in progress?)",
		f.Name, f.Since, cv, f.Since)
}

// Next is the cluster version the controller leader should record, given
// the recorded one, the registered nodes and the version each of them
// reported it runs (a zero Version: a release before cluster versions,
// Base). ok is false when the version should stay: a registered node has
// not reported yet, or the lowest is not above the recorded one. The lowest
// is never above Binary: the leader does not record a version whose
// features it cannot gate.
func Next(recorded slotstore.Version, registered []slotstore.NodeID, running map[slotstore.NodeID]slotstore.Version) (slotstore.Version, bool) {
	if len(registered) == 0 {
		return slotstore.Version{}, false
	}
	lowest := Binary
	for _, id := range registered {
		v, ok := running[id]
		if !ok {
			return slotstore.Version{}, false
		}
		if r := Running(v); r.Less(lowest) {
			lowest = r
		}
	}
	if !Of(recorded).Less(lowest) {
		return slotstore.Version{}, false
	}
	return lowest, true
}

// CanJoin returns nil when a node running v may join, or restart in, a
// cluster at cluster; else a failed_precondition saying why.
func CanJoin(cluster, v slotstore.Version) error {
	cv, run := Of(cluster), Running(v)
	if run.Less(cv) {
		return &slotstore.Error{Code: slotstore.CodeFailedPrecondition,
			Message: fmt.Sprintf("the node runs %s, older than the cluster version %s: run %s or newer", run, cv, cv)}
	}
	if cv.Less(MinSupported) {
		return &slotstore.Error{Code: slotstore.CodeFailedPrecondition,
			Message: fmt.Sprintf("the cluster is at %s, older than %s, the oldest this binary (%s) runs in: upgrade through an intermediate release", cv, MinSupported, Binary)}
	}
	return nil
}
