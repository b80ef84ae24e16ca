package policy

import (
	"sort"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// Observations are the controller leader's latest status report of every
// node, and the nodes' reachability streaks (below). Safe for concurrent
// use: the observe loop records, API handlers and the reconciler read.
type Observations struct {
	mu      sync.Mutex
	reports map[slotstore.NodeID]report
	health  healthBook
}

type report struct {
	status     slotstore.NodeStatus
	receivedAt time.Time
}

// NewObservations returns an empty book.
func NewObservations() *Observations {
	return &Observations{reports: map[slotstore.NodeID]report{}, health: healthBook{tracks: map[slotstore.NodeID]*nodeTrack{}}}
}

// Record keeps node's report, received at.
func (o *Observations) Record(node slotstore.NodeID, status slotstore.NodeStatus, at time.Time) {
	o.mu.Lock()
	o.reports[node] = report{status: status, receivedAt: at}
	o.mu.Unlock()
}

// Retain drops the reports of nodes not in nodes (removed ones: a removed
// node's last report must not speak for a group it left).
func (o *Observations) Retain(nodes []slotstore.NodeID) {
	keep := make(map[slotstore.NodeID]bool, len(nodes))
	for _, id := range nodes {
		keep[id] = true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for id := range o.reports {
		if !keep[id] {
			delete(o.reports, id)
			delete(o.health.tracks, id)
		}
	}
}

// Fresh reports whether there are reports and none is older than within.
func (o *Observations) Fresh(now time.Time, within time.Duration) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range o.reports {
		if now.Sub(r.receivedAt) > within {
			return false
		}
	}
	return len(o.reports) > 0
}

// Versions is the version each node's latest report says it runs, for the
// nodes whose report is younger than within: a node not heard from lately
// may have been started on another binary since (package clusterversion).
func (o *Observations) Versions(now time.Time, within time.Duration) map[slotstore.NodeID]slotstore.Version {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make(map[slotstore.NodeID]slotstore.Version, len(o.reports))
	for id, r := range o.reports {
		if now.Sub(r.receivedAt) <= within {
			out[id] = r.status.Version
		}
	}
	return out
}

// DiskLow reports whether node's latest report says its disk is low
// (package diskguard).
func (o *Observations) DiskLow(node slotstore.NodeID) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	r, ok := o.reports[node]
	return ok && r.status.DiskLow
}

// Node health on the controller leader.
//
// The controller leader collects a status report from every node once per
// ObserveInterval. A node whose latest report is older than UnreachableAfter
// (a few intervals) is unreachable — shown so in the API and the console, and
// never a leader-transfer target. Once it reports again its healthy streak
// starts; until the streak is HoldDown long the node stays held down.
//
// The streaks are what this controller leader saw: they start over when it
// takes the leadership (a node it never saw unreachable has a streak since
// then and is not held down by it; the nodes' own reports of their replicas'
// disruptions cover what happened before, see disruption.go).

// nodeTrack is one node's reachability as this controller leader saw it.
type nodeTrack struct {
	gap          bool      // the node was seen unreachable
	unreachable  bool      // it is now
	healthySince time.Time // start of the current streak (gap only)
}

// healthBook holds the streaks; it lives inside Observations and shares
// its mutex.
type healthBook struct {
	leaderSince time.Time // when this node took the controller leadership; zero: not leading
	tracks      map[slotstore.NodeID]*nodeTrack
}

// Lead starts a new book when this node has just taken the controller
// leadership (reports from an earlier stint are dropped with it).
func (o *Observations) Lead(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.health.leaderSince.IsZero() {
		return
	}
	o.health = healthBook{leaderSince: now, tracks: map[slotstore.NodeID]*nodeTrack{}}
	o.reports = map[slotstore.NodeID]report{}
}

// StepDown ends the book: this node no longer leads the controller.
func (o *Observations) StepDown() {
	o.mu.Lock()
	o.health.leaderSince = time.Time{}
	o.mu.Unlock()
}

// UpdateHealth moves every node's streak to now, from the report ages.
func (o *Observations) UpdateHealth(now time.Time, nodes []slotstore.NodeID, unreachableAfter time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.health.leaderSince.IsZero() {
		return
	}
	for _, id := range nodes {
		t := o.health.tracks[id]
		if t == nil {
			t = &nodeTrack{}
			o.health.tracks[id] = t
		}
		r, ok := o.reports[id]
		down := !ok && now.Sub(o.health.leaderSince) > unreachableAfter || ok && now.Sub(r.receivedAt) > unreachableAfter
		switch {
		case down:
			t.gap, t.unreachable = true, true
		case t.unreachable && ok:
			t.unreachable, t.healthySince = false, r.receivedAt
		}
	}
}

// NodeHealth returns every node's health at now.
func (o *Observations) NodeHealth(now time.Time, nodes []slotstore.NodeID, self slotstore.NodeID) []slotstore.NodeHealth {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := make([]slotstore.NodeHealth, 0, len(nodes))
	for _, id := range nodes {
		h := slotstore.NodeHealth{Node: id, Health: slotstore.NodeUnknown, ReportAgeMs: -1, HealthyForMs: -1, Aggregator: self}
		r, ok := o.reports[id]
		if ok {
			h.ReportAgeMs, h.Version = now.Sub(r.receivedAt).Milliseconds(), r.status.Version
		}
		t := o.health.tracks[id]
		switch {
		case t != nil && t.unreachable:
			h.Health = slotstore.NodeUnreachable
		case ok && t != nil && t.gap:
			h.Health, h.HealthyForMs = slotstore.NodeReachable, now.Sub(t.healthySince).Milliseconds()
		case ok:
			h.Health, h.HealthyForMs = slotstore.NodeReachable, now.Sub(o.health.leaderSince).Milliseconds()
		}
		out = append(out, h)
	}
	return out
}

// HealthyFor returns how long node has reported without a gap, and whether
// this controller leader ever saw it unreachable (false: no gap seen, the
// duration is meaningless). An unreachable node has a zero streak.
func (o *Observations) HealthyFor(now time.Time, node slotstore.NodeID) (time.Duration, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.health.tracks[node]
	if t == nil || !t.gap {
		return 0, false
	}
	if t.unreachable {
		return 0, true
	}
	return now.Sub(t.healthySince), true
}

// nodeOfReplica maps a replica of group g to its node: through the desired
// peers, else through the raft address the membership lists for it.
func nodeOfReplica(st *controller.State, g slotstore.GroupID, replica uint64, addrs map[uint64]string) slotstore.NodeID {
	if node, ok := st.NodeOfReplica(g, replica); ok {
		return node
	}
	if addr, ok := addrs[replica]; ok {
		for id, node := range st.Nodes {
			if node.RaftAddr == addr {
				return id
			}
		}
	}
	return 0
}

// Aggregate builds every group's view at now from the intent (st) and the
// latest reports: self is the aggregating controller leader, and a replica
// is live while its node's report and the leader's hearing of it are both
// younger than unreachableAfter.
func (o *Observations) Aggregate(st *controller.State, now time.Time, self slotstore.NodeID, unreachableAfter time.Duration) []slotstore.GroupView {
	o.mu.Lock()
	reports := make(map[slotstore.NodeID]report, len(o.reports))
	for id, r := range o.reports {
		reports[id] = r
	}
	o.mu.Unlock()
	table, _ := st.Table()
	type seen struct {
		rs slotstore.ReplicaStatus
		at time.Time
	}
	// Every report's replicas by group, in one pass: looking each group up
	// in every report was groups × replicas (256 × 256 a round for a node
	// of 3 at rest, a twentieth of its idle CPU; issue 31).
	byGroup := make(map[slotstore.GroupID][]seen, len(st.Groups))
	type failed struct {
		node slotstore.NodeID
		rf   slotstore.ReplicaFailure
		at   time.Time
	}
	var failedBy map[slotstore.GroupID][]failed // replicas a node could not start
	for _, r := range reports {
		for _, rs := range r.status.Replicas {
			byGroup[rs.Group] = append(byGroup[rs.Group], seen{rs, r.receivedAt})
		}
		for _, rf := range r.status.Failed {
			if failedBy == nil {
				failedBy = map[slotstore.GroupID][]failed{}
			}
			failedBy[rf.Group] = append(failedBy[rf.Group], failed{r.status.Node, rf, r.receivedAt})
		}
	}
	views := make([]slotstore.GroupView, 0, len(st.Groups))
	for _, gid := range st.GroupIDs() {
		grp := st.Groups[gid]
		v := slotstore.GroupView{ID: gid, ConfigEpoch: grp.ConfigEpoch, PreferredLeader: grp.PreferredLeader,
			PreferredSetAtMs: grp.PreferredSetAtMs, Aggregator: self, Voters: []slotstore.NodeID{}, Learners: []slotstore.NodeID{}}
		if table != nil {
			v.HashSlots = len(table.SlotsOf(gid))
		}
		if f := grp.ReadFence; f != nil {
			v.ReadsFenced = f.Reason
		}
		for _, node := range grp.PeerNodes() {
			v.DesiredPeers = append(v.DesiredPeers, slotstore.DesiredPeer{Node: node, ReplicaID: grp.Peers[node]})
		}
		reps := byGroup[gid]
		var best *seen // the report naming the leader at the highest term, the leader's own preferred
		for i := range reps {
			s := &reps[i]
			// A stale report names no leader: the last word of a node that
			// stopped reporting (killed, cut off) would otherwise keep its
			// leadership on show — and the group counted as led — long
			// after its followers began campaigning without it.
			if s.rs.LeaderReplica == 0 || now.Sub(s.at) > unreachableAfter {
				continue
			}
			self := s.rs.LeaderReplica == s.rs.ReplicaID
			if best == nil || s.rs.Term > best.rs.Term ||
				(s.rs.Term == best.rs.Term && self && best.rs.LeaderReplica != best.rs.ReplicaID) {
				best = s
			}
		}
		var leaderApplied uint64
		var voters, nonVoters map[uint64]string
		var heardAgo, unanswered map[uint64]int64 // from the leader's own report
		var leaderReportAge int64
		if best != nil {
			v.Leader = nodeOfReplica(st, gid, best.rs.LeaderReplica, best.rs.Voters)
			v.Term = best.rs.Term
			v.ObservedBy = best.rs.Node
			v.ObservedAtMs = best.at.UnixMilli()
			v.ObservationAgeMs = now.Sub(best.at).Milliseconds()
			for _, s := range reps {
				if s.rs.ReplicaID == best.rs.LeaderReplica && s.rs.LeaderReplica == s.rs.ReplicaID {
					leaderApplied = s.rs.AppliedIndex
					voters, nonVoters, v.ConfigChangeID = s.rs.Voters, s.rs.NonVoters, s.rs.ConfigChangeID
					heardAgo, unanswered, leaderReportAge = s.rs.HeardAgoMs, s.rs.UnansweredMs, now.Sub(s.at).Milliseconds()
				}
			}
		}
		for r := range voters {
			v.Voters = append(v.Voters, nodeOfReplica(st, gid, r, voters))
		}
		for r := range nonVoters {
			v.Learners = append(v.Learners, nodeOfReplica(st, gid, r, nonVoters))
		}
		sortNodes(v.Voters)
		sortNodes(v.Learners)
		reported := map[slotstore.NodeID]bool{}
		for _, s := range reps {
			rv := slotstore.ReplicaView{Node: s.rs.Node, ReplicaID: s.rs.ReplicaID, AppliedIndex: s.rs.AppliedIndex,
				LogFirst: s.rs.LogFirst, LogLast: s.rs.LogLast, Term: s.rs.Term, ReportAgeMs: now.Sub(s.at).Milliseconds()}
			_, rv.Desired = grp.Peers[s.rs.Node]
			switch {
			case voters != nil && voters[s.rs.ReplicaID] != "":
				rv.Role = slotstore.RoleVoter
			case nonVoters != nil && nonVoters[s.rs.ReplicaID] != "":
				rv.Role = slotstore.RoleLearner
			default:
				rv.Role = slotstore.RoleUnknown
			}
			if leaderApplied > s.rs.AppliedIndex {
				rv.Lag = leaderApplied - s.rs.AppliedIndex
			}
			rv.HeardAgoMs, rv.UnansweredMs = -1, -1
			switch ago, ok := heardAgo[s.rs.ReplicaID]; {
			case heardAgo != nil && s.rs.ReplicaID == best.rs.LeaderReplica:
				rv.HeardAgoMs, rv.UnansweredMs = 0, 0
			case ok && ago >= 0:
				rv.HeardAgoMs, rv.UnansweredMs = ago+leaderReportAge, 0
				if wait := unanswered[s.rs.ReplicaID]; wait > 0 {
					// Still waiting, unless answered since the report.
					rv.UnansweredMs = wait + leaderReportAge
				}
			}
			rv.SnapshotBytes = s.rs.SnapshotBytes
			rv.Disruption, rv.DisruptedAgoMs = s.rs.Disruption, s.rs.DisruptedAgoMs
			if rv.Disruption != "" {
				rv.DisruptedAgoMs += rv.ReportAgeMs
			}
			rv.Live = rv.Role == slotstore.RoleVoter && rv.ReportAgeMs <= unreachableAfter.Milliseconds() &&
				rv.HeardAgoMs >= 0 && rv.UnansweredMs >= 0 && rv.UnansweredMs <= unreachableAfter.Milliseconds()
			if rv.Live {
				v.LiveVoters++
			}
			reported[s.rs.Node] = true
			v.Replicas = append(v.Replicas, rv)
		}
		for _, f := range failedBy[gid] { // replicas their nodes could not start
			if reported[f.node] {
				continue
			}
			_, desired := grp.Peers[f.node]
			v.Replicas = append(v.Replicas, slotstore.ReplicaView{Node: f.node, ReplicaID: f.rf.ReplicaID, Role: slotstore.RoleUnknown,
				Desired: desired, ReportAgeMs: now.Sub(f.at).Milliseconds(), HeardAgoMs: -1, UnansweredMs: -1, Failed: f.rf.Reason, Fenced: f.rf.Fenced})
			reported[f.node] = true
		}
		for _, p := range v.DesiredPeers { // desired peers that reported nothing
			if !reported[p.Node] {
				v.Replicas = append(v.Replicas, slotstore.ReplicaView{Node: p.Node, ReplicaID: p.ReplicaID, Role: slotstore.RoleUnknown,
					Desired: true, ReportAgeMs: -1, HeardAgoMs: -1, UnansweredMs: -1})
			}
		}
		sort.Slice(v.Replicas, func(i, j int) bool { return v.Replicas[i].Node < v.Replicas[j].Node })
		switch {
		case v.Leader == 0:
			v.Health = slotstore.GroupNoLeader
		case v.LiveVoters < len(v.DesiredPeers):
			v.Health = slotstore.GroupUnderReplicated
		default:
			v.Health = slotstore.GroupHealthy
		}
		views = append(views, v)
	}
	return views
}

func sortNodes(ns []slotstore.NodeID) { sort.Slice(ns, func(i, j int) bool { return ns[i] < ns[j] }) }
