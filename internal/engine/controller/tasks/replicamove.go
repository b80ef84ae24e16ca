package tasks

import (
	"context"
	"fmt"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// moveStep does one step of a replica move.
func (e *Executor) moveStep(ctx context.Context, t controller.Task) error {
	toAddr := ""
	if node, ok := e.cfg.Node.Controller().Nodes[t.To]; ok {
		toAddr = node.RaftAddr
	}
	if t.Status == controller.TaskCancelling {
		m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: t.Group, Op: OpRemove, ReplicaID: t.NewReplicaID})
		if err != nil {
			return err
		}
		return e.advance(ctx, t, "", controller.TaskCancelled, "cancelled", m.Record(t.Phase, "new replica removed; cancelled"))
	}
	switch t.Phase {
	case controller.PhaseAddLearner:
		m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: t.Group, Op: OpAddLearner, ReplicaID: t.NewReplicaID, Addr: toAddr})
		if err != nil {
			return err
		}
		return e.advance(ctx, t, nextMovePhase(t), "", "", m.Record(t.Phase, fmt.Sprintf("replica %d added as a learner on node %d", t.NewReplicaID, t.To)))
	case controller.PhaseCatchUp:
		octx, cancel := context.WithTimeout(ctx, time.Second)
		e.cfg.Node.Observe(octx)
		cancel()
		v, err := e.cfg.Node.Group(ctx, t.Group)
		if err != nil {
			return err
		}
		var leaderApplied, leaderLog uint64
		leaderSeen := false
		for _, r := range v.Replicas {
			if r.Node == v.Leader && r.ReportAgeMs >= 0 {
				leaderApplied, leaderLog, leaderSeen = r.AppliedIndex, r.LogLast, true
			}
		}
		for _, r := range v.Replicas {
			if r.Node != t.To || r.ReplicaID != t.NewReplicaID {
				continue
			}
			fresh := r.ReportAgeMs >= 0 && time.Duration(r.ReportAgeMs)*time.Millisecond <= e.cfg.ActiveWithin
			// Caught up: the learner has applied and logged within MaxLag of
			// the leader (applied indexes stay 0 in a group with no writes,
			// so the log range is the evidence then).
			if fresh && leaderSeen && r.Lag <= e.cfg.MaxLag && r.LogLast+e.cfg.MaxLag >= leaderLog && r.LogLast > 0 {
				m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: t.Group, Op: OpGet})
				if err != nil {
					return err
				}
				return e.advance(ctx, t, nextMovePhase(t), "", "",
					m.Record(t.Phase, fmt.Sprintf("learner applied %d, leader %d", r.AppliedIndex, leaderApplied)))
			}
			if fresh && r.SnapshotBytes != 0 && r.SnapshotBytes != t.SnapshotBytes &&
				e.cfg.Now().Sub(catchUpBegan(t)) <= catchUpPhaseTimeouts*e.cfg.PhaseTimeout {
				// Receiving a snapshot: its log and applied index stand still
				// until the whole group has arrived, which for a large group
				// takes longer than the phase timeout. Bytes received since the
				// last record are progress and restart the phase's clock; a
				// learner that receives nothing still times out, and so does
				// one past catchUpPhaseTimeouts since the phase began (a
				// snapshot sent again and again — rejected at its end, or
				// outrun by the writes — changes the count forever).
				return e.cfg.Node.Advance(ctx, controller.AdvanceTask{ID: t.ID, ExpectedPhase: t.Phase, SnapshotBytes: r.SnapshotBytes,
					Error: fmt.Sprintf("learner on node %d is receiving a snapshot: %d bytes so far", t.To, r.SnapshotBytes)})
			}
			if fresh && leaderSeen && r.LogLast < leaderLog {
				e.nudge(t, r.LogLast, v.Leader)
			}
			return fmt.Errorf("learner on node %d has applied %d of %d and logged %d of %d (reported %dms ago)",
				t.To, r.AppliedIndex, leaderApplied, r.LogLast, leaderLog, r.ReportAgeMs)
		}
		return fmt.Errorf("node %d has not reported replica %d yet", t.To, t.NewReplicaID)
	case controller.PhasePromote:
		m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: t.Group, Op: OpPromote, ReplicaID: t.NewReplicaID, Addr: toAddr})
		if err != nil {
			return err
		}
		if _, ok := m.Voters[t.NewReplicaID]; !ok {
			return fmt.Errorf("replica %d is not a voter after promotion", t.NewReplicaID)
		}
		return e.advance(ctx, t, nextMovePhase(t), "", "", m.Record(t.Phase, fmt.Sprintf("replica %d promoted to voter", t.NewReplicaID)))
	case controller.PhaseRemoveOld:
		// Never remove the leader under itself: hand leadership to the new
		// replica first (a rebuild in place: to another live voter).
		if e.cfg.Node.GroupLeader(t.Group) == t.From {
			if v, err := e.cfg.Node.Group(ctx, t.Group); err == nil {
				to := t.To
				if controller.Rebuilds(&t) {
					to = otherLiveVoter(v, t.From)
				}
				tctx, cancel := context.WithTimeout(ctx, e.cfg.RequestTimeout)
				err = e.cfg.Node.Transfer(tctx, v, to)
				cancel()
				if err != nil {
					return fmt.Errorf("moving leadership off node %d before removing it: %w", t.From, err)
				}
			}
		}
		m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: t.Group, Op: OpRemove, ReplicaID: t.OldReplicaID})
		if err != nil {
			return err
		}
		if _, ok := m.Voters[t.OldReplicaID]; ok {
			return fmt.Errorf("replica %d is still a voter", t.OldReplicaID)
		}
		return e.advance(ctx, t, nextMovePhase(t), "", "", m.Record(t.Phase, fmt.Sprintf("replica %d of node %d removed", t.OldReplicaID, t.From)))
	case controller.PhaseCommit:
		m, err := e.cfg.Node.Membership(ctx, MembershipRequest{Group: t.Group, Op: OpGet})
		if err != nil {
			return err
		}
		return e.advance(ctx, t, controller.PhaseDone, "", "", m.Record(t.Phase, "desired peers committed, config epoch +1"))
	}
	return nil
}

// learnerStallWake is how long a learner behind its leader may log
// nothing before its group's leader is woken (nudge).
const learnerStallWake = 3 * time.Second

// learnerMark is a learner's log as a catch-up step last saw it grow.
type learnerMark struct {
	log   uint64
	since time.Time
}

// nudge wakes the group leader's replica when t's learner, behind it, has
// logged nothing new for learnerStallWake. A leader sends a new remote one
// append and then waits (dragonboat's probe state) for the answer to a
// heartbeat before it sends again; if that append was lost — it reached
// the learner's node before that node started the replica (a message for a
// shard it does not run is dropped), or went out on a connection that had
// gone stale after a restart — only the next heartbeat resumes it, and a
// quiesced group sends none: the move stalled until its phase timed out
// (TestOpsScripts in CI, twice: a learner logged nothing for 100 s). A woken leader
// ticks again, its heartbeat reaches the learner, and the answer resumes
// the appends (dragonboat raft.go handleLeaderHeartbeatResp). Only the
// leader's node is asked: woken followers would campaign.
func (e *Executor) nudge(t controller.Task, log uint64, leader slotstore.NodeID) {
	now := e.cfg.Now()
	e.mu.Lock()
	m, ok := e.learners[t.ID]
	wake := ok && m.log == log && now.Sub(m.since) >= learnerStallWake
	if !ok || m.log != log || wake {
		e.learners[t.ID] = learnerMark{log: log, since: now}
	}
	forgetEnded(e, e.learners)
	e.mu.Unlock()
	if wake && leader != 0 {
		e.cfg.Logger.Info("waking a group's leader: its learner logged nothing new", "task", t.ID, "group", t.Group,
			"leader", leader, "learner_node", t.To, "logged", log, "for", learnerStallWake)
		e.cfg.Node.WakeLeader(t.Group, leader)
	}
}

// catchUpPhaseTimeouts bounds a replica move's catch-up that receives a
// snapshot: bytes received are progress for at most this many phase
// timeouts from the phase's start (an hour at the default 2 minutes: a
// 180 GB group at 50 MB/s).
const catchUpPhaseTimeouts = 30

// catchUpBegan is when t's catch-up began: when its learner was added (the
// newest add_learner record), else when the task was made. A move resumed
// after a failure keeps its first start: its budget is not renewed.
func catchUpBegan(t controller.Task) time.Time {
	for i := len(t.History) - 1; i >= 0; i-- {
		if t.History[i].Phase == controller.PhaseAddLearner {
			return time.UnixMilli(t.History[i].AtMs)
		}
	}
	return time.UnixMilli(t.CreatedAtMs)
}

// nextMovePhase is the phase after t's in its own order (a move's or a
// rebuild's in place, controller.Phases).
func nextMovePhase(t controller.Task) slotstore.TaskPhase {
	phases := controller.Phases(&t)
	if i := controller.PhaseIndex(&t, t.Phase); i >= 0 && i+1 < len(phases) {
		return phases[i+1]
	}
	return controller.PhaseDone
}

// otherLiveVoter is a live voter of v on another node than not (0: none;
// the transfer then refuses).
func otherLiveVoter(v slotstore.GroupView, not slotstore.NodeID) slotstore.NodeID {
	for _, r := range v.Replicas {
		if r.Node != not && r.Role == slotstore.RoleVoter && r.Live {
			return r.Node
		}
	}
	return 0
}
