package cluster

import (
	"fmt"
	"time"

	"slotmeta/internal/slotstore"
)

// Reasons a leader transfer is unsafe, or a reconciliation step is skipped.
// They are machine-readable: the API, the decision log and the console show
// them as they are.
const (
	ReasonStaleIntent         = "stale_intent"
	ReasonVoterMismatch       = "voter_mismatch"
	ReasonConfigChangePending = "config_change_pending"
	ReasonTargetInactive      = "target_inactive"
	ReasonTargetLagging       = "target_lagging"
	ReasonTransferInFlight    = "transfer_in_flight"
	ReasonTargetNotPeer       = "target_not_desired_peer"
	ReasonTargetNotVoter      = "target_not_voter"
	ReasonNoLeader            = "no_live_leader"
	ReasonAlreadyLeader       = "already_leader"
	ReasonNoObservation       = "no_observation"
)

// LeadershipPolicy holds the thresholds of the safety checks.
type LeadershipPolicy struct {
	PreferredTTL     time.Duration // an intent older than this is stale (default 24h)
	ActiveWithin     time.Duration // a node that reported longer ago is inactive (default 5s)
	MaxLag           uint64        // a target further behind the leader is lagging (default 64 entries)
	TransferCooldown time.Duration // a transfer started this recently is still in flight (default 5s)
}

func (p *LeadershipPolicy) ensureDefaults() {
	if p.PreferredTTL == 0 {
		p.PreferredTTL = 24 * time.Hour
	}
	if p.ActiveWithin == 0 {
		p.ActiveWithin = 5 * time.Second
	}
	if p.MaxLag == 0 {
		p.MaxLag = 64
	}
	if p.TransferCooldown == 0 {
		p.TransferCooldown = 5 * time.Second
	}
}

// Blocker and Preflight are the domain types (package slotstore).
type (
	Blocker   = slotstore.Blocker
	Preflight = slotstore.Preflight
)

// checkTransfer runs every safety check of moving v's leadership to target.
// It is a pure function of the view, the policy, now and whether a transfer
// is in flight: the API's preflight, the transfer itself and the
// preferred-leader reconciler all use it.
func checkTransfer(v slotstore.GroupView, target slotstore.NodeID, p LeadershipPolicy, inFlight bool) Preflight {
	pf := Preflight{Group: v.ID, Target: target, Leader: v.Leader, Term: v.Term, TargetReportAge: -1,
		ObservedBy: v.ObservedBy, ObservationAge: v.ObservationAgeMs, Blockers: []Blocker{}}
	block := func(reason, format string, args ...any) {
		pf.Blockers = append(pf.Blockers, Blocker{Reason: reason, Detail: fmt.Sprintf(format, args...)})
	}
	desired := map[slotstore.NodeID]bool{}
	for _, d := range v.DesiredPeers {
		desired[d.Node] = true
	}
	if !desired[target] {
		block(ReasonTargetNotPeer, "node %d is not a desired peer of group %d", target, v.ID)
	}
	if v.Leader == 0 {
		block(ReasonNoLeader, "no replica reports a live leader")
	} else if v.Leader == target {
		block(ReasonAlreadyLeader, "node %d already leads group %d (term %d)", target, v.ID, v.Term)
	}
	if v.ObservedBy == 0 {
		block(ReasonNoObservation, "no status report about group %d yet", v.ID)
	}
	voters := map[slotstore.NodeID]bool{}
	for _, n := range v.Voters {
		voters[n] = true
	}
	if v.ObservedBy != 0 && !voters[target] {
		block(ReasonTargetNotVoter, "node %d is not a voter in the observed membership %v", target, v.Voters)
	}
	if len(v.Learners) > 0 {
		block(ReasonConfigChangePending, "learners %v are in the membership", v.Learners)
	}
	if v.ObservedBy != 0 && !sameNodes(v.Voters, desired) {
		block(ReasonVoterMismatch, "observed voters %v differ from the desired peers", v.Voters)
	}
	for _, r := range v.Replicas {
		if r.Node != target {
			continue
		}
		pf.TargetLag, pf.TargetReportAge = r.Lag, r.ReportAgeMs
		if r.ReportAgeMs < 0 || time.Duration(r.ReportAgeMs)*time.Millisecond > p.ActiveWithin {
			block(ReasonTargetInactive, "node %d last reported %dms ago (limit %v)", target, r.ReportAgeMs, p.ActiveWithin)
		}
		if r.Lag > p.MaxLag {
			block(ReasonTargetLagging, "node %d is %d entries behind the leader (limit %d)", target, r.Lag, p.MaxLag)
		}
	}
	if pf.TargetReportAge < 0 && desired[target] && !hasBlocker(pf, ReasonTargetInactive) {
		block(ReasonTargetInactive, "node %d has not reported group %d", target, v.ID)
	}
	if inFlight {
		block(ReasonTransferInFlight, "a leader transfer of group %d is in flight", v.ID)
	}
	pf.OK = len(pf.Blockers) == 0
	return pf
}

func hasBlocker(pf Preflight, reason string) bool {
	for _, b := range pf.Blockers {
		if b.Reason == reason {
			return true
		}
	}
	return false
}

func sameNodes(list []slotstore.NodeID, set map[slotstore.NodeID]bool) bool {
	if len(list) != len(set) {
		return false
	}
	for _, n := range list {
		if !set[n] {
			return false
		}
	}
	return true
}
