package policy

import (
	"cmp"
	"fmt"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Reasons a leader transfer is unsafe, or a reconciliation step is skipped.
// They are machine-readable: the API, the decision log and the console show
// them as they are.
const (
	ReasonStaleIntent         slotstore.Reason = "stale_intent"
	ReasonVoterMismatch       slotstore.Reason = "voter_mismatch"
	ReasonConfigChangePending slotstore.Reason = "config_change_pending"
	ReasonTargetInactive      slotstore.Reason = "target_inactive"
	ReasonTargetLagging       slotstore.Reason = "target_lagging"
	ReasonTransferInFlight    slotstore.Reason = "transfer_in_flight"
	ReasonTargetNotPeer       slotstore.Reason = "target_not_desired_peer"
	ReasonTargetNotVoter      slotstore.Reason = "target_not_voter"
	ReasonNoLeader            slotstore.Reason = "no_live_leader"
	ReasonAlreadyLeader       slotstore.Reason = "already_leader"
	ReasonNoObservation       slotstore.Reason = "no_observation"
	ReasonTargetUnreachable   slotstore.Reason = "target_unreachable"
	ReasonTargetHeldDown      slotstore.Reason = "target_held_down"
	ReasonTransferBackoff     slotstore.Reason = "transfer_backoff"
	ReasonTargetDiskLow       slotstore.Reason = "target_disk_low"
	// ReasonLeaderDiskLow: the leader's node is low on disk (it refuses
	// the group's writes): its leadership moves to another voter.
	ReasonLeaderDiskLow slotstore.Reason = "leader_disk_low"
)

// Leadership holds the thresholds of the leader-transfer checks.
type Leadership struct {
	PreferredTTL     time.Duration // an intent older than this is stale (default 24h)
	ActiveWithin     time.Duration // a node that reported longer ago is inactive (default 3s)
	MaxLag           uint64        // a target further behind the leader is lagging (default 64 entries)
	TransferCooldown time.Duration // a transfer started this recently is still in flight (default 5s)
	// ReachableWithin: the group leader's node must have received a Raft
	// message from the target this recently (default: one election timeout,
	// i.e. ten missed heartbeats; Config fills it from the Raft timing).
	ReachableWithin time.Duration
	// HoldDown keeps a node that was disrupted — unreachable, restarted,
	// lost its leadership or its leader — from being made leader until it
	// has been healthy this long (default 30s).
	HoldDown time.Duration
	// After a failed transfer, the group's next one waits BackoffBase,
	// doubling per failure in a row up to BackoffMax, jittered ±25 %
	// (defaults 5s and 5m).
	BackoffBase, BackoffMax time.Duration
}

// EnsureDefaults fills zero fields.
func (p *Leadership) EnsureDefaults() {
	p.PreferredTTL = cmp.Or(p.PreferredTTL, 24*time.Hour)
	p.ActiveWithin = cmp.Or(p.ActiveWithin, 3*time.Second)
	p.MaxLag = cmp.Or(p.MaxLag, 64)
	p.TransferCooldown = cmp.Or(p.TransferCooldown, 5*time.Second)
	p.ReachableWithin = cmp.Or(p.ReachableWithin, 500*time.Millisecond)
	p.HoldDown = cmp.Or(p.HoldDown, 30*time.Second)
	p.BackoffBase = cmp.Or(p.BackoffBase, 5*time.Second)
	if p.BackoffMax == 0 {
		p.BackoffMax = 5 * time.Minute
	}
}

// Facts are what the checks need besides the group's view: all of it
// observed or remembered by the controller leader at Now.
type Facts struct {
	Now      time.Time
	InFlight bool         // a transfer of the group is in flight
	Backoff  BackoffState // the group's back-off after failed transfers
	// The target node's streak of reports since this controller leader
	// last saw it unreachable (Gap false: it never did).
	TargetGap        bool
	TargetHealthyFor time.Duration
	TargetDown       bool // the node is unreachable now
	// TargetDiskLow: the node reports its disk low (package diskguard):
	// it would refuse the group's writes as their leader.
	TargetDiskLow bool
}

// Blocker and Preflight are the domain types (package slotstore).
type (
	Blocker   = slotstore.Blocker
	Preflight = slotstore.Preflight
)

// CheckTransfer runs every safety check of moving v's leadership to target.
// It is a pure function of the view, the policy and the facts: the API's
// preflight, the transfer itself and the preferred-leader reconciler all
// use it. Besides the membership and progress checks it asks whether the
// target is reachable now — its node reports, and it has not left the
// leader's Raft requests unanswered for longer than ReachableWithin — and whether it was
// disrupted within HoldDown; and it holds the group back while it is in
// back-off after failed transfers.
func CheckTransfer(v slotstore.GroupView, target slotstore.NodeID, p Leadership, f Facts) Preflight {
	pf := Preflight{Group: v.ID, Target: target, Leader: v.Leader, Term: v.Term, TargetReportAge: -1,
		ObservedBy: v.ObservedBy, ObservationAge: v.ObservationAgeMs, Blockers: []Blocker{}}
	block := func(reason slotstore.Reason, format string, args ...any) {
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
		if v.Term != 0 && r.Term != 0 && r.Term != v.Term {
			// The target has not reported since the leadership changed:
			// what its report says (fresh, caught up, heard) is about the
			// old term — it may be the old leader, killed or cut off, and
			// the new leader has not had time to find it silent (chaos:
			// a transfer toward a killed leader 0.9 s after the kill).
			block(ReasonTargetInactive, "node %d last reported term %d, the group is at term %d: no report since the leader changed",
				target, r.Term, v.Term)
		}
		if r.Lag > p.MaxLag {
			block(ReasonTargetLagging, "node %d is %d entries behind the leader (limit %d)", target, r.Lag, p.MaxLag)
		}
		if v.Leader != 0 && v.Leader != target {
			// UnansweredMs is as of now: the leader's report plus its age.
			// Silence alone is no evidence: a quiesced group sends nothing
			// (its leader's transfer wakes it).
			limit := p.ReachableWithin + time.Duration(max(v.ObservationAgeMs, 0))*time.Millisecond
			switch {
			case r.HeardAgoMs < 0 || r.UnansweredMs < 0:
				block(ReasonTargetUnreachable, "the leader (node %d) has not reported hearing from node %d", v.Leader, target)
			case time.Duration(r.UnansweredMs)*time.Millisecond > limit:
				block(ReasonTargetUnreachable, "node %d has left the leader's (node %d) requests unanswered for %dms (limit %v after its report of %dms ago)",
					target, v.Leader, r.UnansweredMs, p.ReachableWithin, v.ObservationAgeMs)
			case r.UnansweredMs > 0 && time.Duration(r.HeardAgoMs)*time.Millisecond > limit:
				// Asked and silent: a leader elected after its predecessor
				// (the target) was cut off has asked it only since its
				// election, but last heard it while following it, before
				// the cut (chaos: a transfer toward the cut-off node).
				block(ReasonTargetUnreachable, "node %d has not answered the leader (node %d), which last heard from it %dms ago and asked %dms ago (limit %v after its report of %dms ago)",
					target, v.Leader, r.HeardAgoMs, r.UnansweredMs, p.ReachableWithin, v.ObservationAgeMs)
			}
		}
		if r.Disruption != "" && time.Duration(r.DisruptedAgoMs)*time.Millisecond < p.HoldDown {
			block(ReasonTargetHeldDown, "node %d reported its replica %s %dms ago (hold-down %v)", target, r.Disruption, r.DisruptedAgoMs, p.HoldDown)
		}
	}
	if pf.TargetReportAge < 0 && desired[target] && !HasBlocker(pf, ReasonTargetInactive) {
		block(ReasonTargetInactive, "node %d has not reported group %d", target, v.ID)
	}
	if f.TargetDown {
		block(ReasonTargetUnreachable, "node %d is unreachable: no status report for longer than the limit", target)
	} else if f.TargetGap && f.TargetHealthyFor < p.HoldDown {
		block(ReasonTargetHeldDown, "node %d was unreachable; healthy for %v of the %v hold-down", target, f.TargetHealthyFor.Round(time.Millisecond), p.HoldDown)
	}
	if f.TargetDiskLow {
		block(ReasonTargetDiskLow, "node %d's disk is low: as the leader it would refuse the group's writes", target)
	}
	if f.InFlight {
		block(ReasonTransferInFlight, "a leader transfer of group %d is in flight", v.ID)
	}
	if f.Now.Before(f.Backoff.Until) {
		block(ReasonTransferBackoff, "%d failed transfer(s) of group %d in a row: next attempt in %v", f.Backoff.Failures, v.ID,
			f.Backoff.Until.Sub(f.Now).Round(time.Millisecond))
	}
	pf.OK = len(pf.Blockers) == 0
	return pf
}

// HasBlocker reports whether pf lists a blocker with reason.
func HasBlocker(pf Preflight, reason slotstore.Reason) bool {
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
