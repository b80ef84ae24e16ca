package controller

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// The cluster version (package clusterversion) is replicated here: the
// controller leader records it once every registered node runs it, and
// this state machine refuses — on every replica that knows them — the
// commands and forms of a feature the recorded version does not allow yet.
// A replica of an older release refuses them too (it does not know them),
// so a mixed cluster's controller replicas stay alike.

// SetClusterVersion raises the cluster version to Version (feature
// clusterversion.ClusterVersion: the leader proposes it only when every
// node runs Version, so every replica knows the command).
type SetClusterVersion struct {
	Version slotstore.Version `json:"version"`
}

func applySetClusterVersion(s *State, c *SetClusterVersion) Result {
	if c.Version.IsZero() {
		return refuse(slotstore.CodeInvalidArgument, "no cluster version")
	}
	if cur := s.Version(); !cur.Less(c.Version) {
		return refuse(slotstore.CodeFailedPrecondition, "the cluster version is %s already; it is never lowered", cur)
	}
	s.ClusterVersion = c.Version
	return Result{OK: true}
}

// Version is the cluster version (clusterversion.Base when none is
// recorded: a cluster founded or last finalized by a release before
// cluster versions, or founded moments ago).
func (s *State) Version() slotstore.Version { return clusterversion.Of(s.ClusterVersion) }

// Allows returns nil when the cluster version allows f, else the gate's
// failed_precondition (clusterversion.Gate).
func (s *State) Allows(f clusterversion.Feature) error {
	return clusterversion.Gate(s.ClusterVersion, f)
}

// gated refuses a command of feature f while the cluster version does not
// allow it (no false: apply it).
func gated(s *State, f clusterversion.Feature) (res Result, no bool) {
	if why := clusterversion.Refusal(s.ClusterVersion, f); why != "" {
		return Result{Code: slotstore.CodeFailedPrecondition, Message: why}, true
	}
	return Result{}, false
}
