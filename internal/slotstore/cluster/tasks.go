package cluster

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/meta"
)

// Replica moves are controller tasks carried out by the controller leader,
// one step per round (TasksOnce): every step reads the group's Raft
// membership, does at most one membership change, and records what it
// observed when it advances the task (compare-and-set on the phase). State
// lives only in the replicated task, so a new controller leader resumes a
// task where the old one left it. A step that cannot complete within
// TaskPhaseTimeout fails the task with its reason and changes nothing more:
// the old membership keeps serving. Asking for the same move again resumes
// the failed task.

// CreateReplicaMove starts (or resumes) moving g's replica from one node to another.
func (n *Node) CreateReplicaMove(ctx context.Context, g slotstore.GroupID, from, to slotstore.NodeID) (slotstore.Task, error) {
	id, err := n.proposeControllerTask(ctx, controller.Command{CreateMove: &controller.CreateMove{Group: g, From: from, To: to}})
	if err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// Task returns one task as this node last applied the controller state.
func (n *Node) Task(id uint64) (slotstore.Task, error) {
	if t, ok := n.ctrl.Load().Tasks[id]; ok {
		return *t, nil
	}
	return slotstore.Task{}, slotstore.Errorf(slotstore.CodeNotFound, "task %d does not exist", id)
}

// Tasks lists every kept task, newest first.
func (n *Node) Tasks() []slotstore.Task {
	st := n.ctrl.Load()
	out := make([]slotstore.Task, 0, len(st.Tasks))
	for _, t := range st.Tasks {
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID > out[j].ID })
	return out
}

// CancelTask asks to cancel a task before its commit.
func (n *Node) CancelTask(ctx context.Context, id uint64) (slotstore.Task, error) {
	if _, err := n.proposeControllerTask(ctx, controller.Command{CancelTask: &controller.CancelTask{ID: id}}); err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// proposeControllerTask proposes a task command and returns the task id.
// SyncPropose returns once this node's replica applied the command, so the
// task is already in the state Task reads.
func (n *Node) proposeControllerTask(ctx context.Context, c controller.Command) (uint64, error) {
	r, err := n.proposeControllerResult(ctx, c)
	return r.TaskID, err
}

// TasksOnce runs one step of every running task (controller leader only).
func (n *Node) TasksOnce(ctx context.Context) {
	if !n.isControllerLeader() {
		return
	}
	for _, t := range n.Tasks() {
		if t.Status != controller.TaskRunning && t.Status != controller.TaskCancelling {
			continue
		}
		if err := n.stepTask(ctx, t); err != nil {
			n.cfg.Logger.Warn("task step", "task", t.ID, "phase", t.Phase, "err", err)
		}
	}
}

// advance records a step of task t.
func (n *Node) advance(ctx context.Context, t slotstore.Task, phase, status, errMsg string, obs *slotstore.PhaseRecord) error {
	_, err := n.proposeControllerResult(ctx, controller.Command{AdvanceTask: &controller.AdvanceTask{
		ID: t.ID, ExpectedPhase: t.Phase, Phase: phase, Status: status, Error: errMsg, Observed: obs}})
	if err == nil {
		what := fmt.Sprintf("%s node %d→%d", t.Kind, t.From, t.To)
		if t.HashSlot != nil {
			what = fmt.Sprintf("%s of hash slot %d, group %d→%d", t.Kind, *t.HashSlot, t.Group, t.ToGroup)
		}
		n.record(slotstore.Decision{Group: t.Group, Kind: "task", Reason: t.Kind + ":" + t.Phase + "→" + firstNonEmpty(phase, status),
			Detail: fmt.Sprintf("task %d (%s) %s", t.ID, what, firstNonEmpty(errMsg, "ok"))})
	}
	return err
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// stepTask does one step of t and advances it, or fails it after the phase
// has been stuck for TaskPhaseTimeout.
func (n *Node) stepTask(ctx context.Context, t slotstore.Task) error {
	err := n.tryStep(ctx, t)
	if err == nil {
		return nil
	}
	stuck := n.cfg.Now().Sub(time.UnixMilli(t.UpdatedAtMs))
	if stuck > n.cfg.TaskPhaseTimeout {
		reason := fmt.Sprintf("phase %s did not complete within %v: %v", t.Phase, n.cfg.TaskPhaseTimeout, err)
		return n.advance(ctx, t, "", controller.TaskFailed, reason, nil)
	}
	return err
}

func (n *Node) tryStep(ctx context.Context, t slotstore.Task) error {
	if t.Kind == controller.TaskSlotMigration {
		return n.trySlotStep(ctx, t)
	}
	toAddr := ""
	if node, ok := n.ctrl.Load().Nodes[t.To]; ok {
		toAddr = node.RaftAddr
	}
	if t.Status == controller.TaskCancelling {
		m, err := n.membership(ctx, membershipRequest{Group: t.Group, Op: opRemove, ReplicaID: t.NewReplicaID})
		if err != nil {
			return err
		}
		return n.advance(ctx, t, "", controller.TaskCancelled, "cancelled", m.record(t.Phase, "new replica removed; cancelled"))
	}
	switch t.Phase {
	case controller.PhaseAddLearner:
		m, err := n.membership(ctx, membershipRequest{Group: t.Group, Op: opAddLearner, ReplicaID: t.NewReplicaID, Addr: toAddr})
		if err != nil {
			return err
		}
		return n.advance(ctx, t, controller.PhaseCatchUp, "", "", m.record(t.Phase, fmt.Sprintf("replica %d added as a learner on node %d", t.NewReplicaID, t.To)))
	case controller.PhaseCatchUp:
		octx, cancel := context.WithTimeout(ctx, time.Second)
		n.ObserveOnce(octx)
		cancel()
		v, err := n.Group(ctx, t.Group)
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
			fresh := r.ReportAgeMs >= 0 && time.Duration(r.ReportAgeMs)*time.Millisecond <= n.cfg.Leadership.ActiveWithin
			// Caught up: the learner has applied and logged within MaxLag of
			// the leader (applied indexes stay 0 in a group with no writes,
			// so the log range is the evidence then).
			if fresh && leaderSeen && r.Lag <= n.cfg.Leadership.MaxLag && r.LogLast+n.cfg.Leadership.MaxLag >= leaderLog && r.LogLast > 0 {
				m, err := n.membership(ctx, membershipRequest{Group: t.Group, Op: opGet})
				if err != nil {
					return err
				}
				return n.advance(ctx, t, controller.PhasePromote, "", "",
					m.record(t.Phase, fmt.Sprintf("learner applied %d, leader %d", r.AppliedIndex, leaderApplied)))
			}
			return fmt.Errorf("learner on node %d has applied %d of %d and logged %d of %d (reported %dms ago)",
				t.To, r.AppliedIndex, leaderApplied, r.LogLast, leaderLog, r.ReportAgeMs)
		}
		return fmt.Errorf("node %d has not reported replica %d yet", t.To, t.NewReplicaID)
	case controller.PhasePromote:
		m, err := n.membership(ctx, membershipRequest{Group: t.Group, Op: opPromote, ReplicaID: t.NewReplicaID, Addr: toAddr})
		if err != nil {
			return err
		}
		if _, ok := m.Voters[t.NewReplicaID]; !ok {
			return fmt.Errorf("replica %d is not a voter after promotion", t.NewReplicaID)
		}
		return n.advance(ctx, t, controller.PhaseRemoveOld, "", "", m.record(t.Phase, fmt.Sprintf("replica %d promoted to voter", t.NewReplicaID)))
	case controller.PhaseRemoveOld:
		// Never remove the leader under itself: hand leadership to the new
		// replica first.
		if st, ok := n.router.Load().Group(t.Group); ok && st.Leader == t.From {
			if v, err := n.Group(ctx, t.Group); err == nil {
				tctx, cancel := context.WithTimeout(ctx, n.cfg.RequestTimeout)
				_, err = n.executeTransfer(tctx, v, t.To)
				cancel()
				if err != nil {
					return fmt.Errorf("moving leadership off node %d before removing it: %w", t.From, err)
				}
			}
		}
		m, err := n.membership(ctx, membershipRequest{Group: t.Group, Op: opRemove, ReplicaID: t.OldReplicaID})
		if err != nil {
			return err
		}
		if _, ok := m.Voters[t.OldReplicaID]; ok {
			return fmt.Errorf("replica %d is still a voter", t.OldReplicaID)
		}
		return n.advance(ctx, t, controller.PhaseCommit, "", "", m.record(t.Phase, fmt.Sprintf("replica %d of node %d removed", t.OldReplicaID, t.From)))
	case controller.PhaseCommit:
		m, err := n.membership(ctx, membershipRequest{Group: t.Group, Op: opGet})
		if err != nil {
			return err
		}
		return n.advance(ctx, t, controller.PhaseDone, "", "", m.record(t.Phase, "desired peers committed, config epoch +1"))
	}
	return nil
}

// StoredKeys counts the keys this node's store holds under group g's prefix
// (0 once a removed replica's data is gone).
func (n *Node) StoredKeys(g slotstore.GroupID) (int, error) {
	return n.countKeys(meta.GroupPrefix(g))
}

// StoredSlotKeys counts the rows this node's store holds for hash slot hs
// under group g (0 once the group released the slot).
func (n *Node) StoredSlotKeys(g slotstore.GroupID, hs slotstore.HashSlot) (int, error) {
	return n.countKeys(meta.SlotPrefix(g, hs))
}

func (n *Node) countKeys(prefix []byte) (int, error) {
	it, err := n.db.Pebble().NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
	if err != nil {
		return 0, err
	}
	count := 0
	for it.First(); it.Valid(); it.Next() {
		count++
	}
	return count, it.Close()
}

// CreateSlotMigration starts (or resumes a failed) migration of hash slot hs
// to group to. Refused (permission_denied) unless the node was started with
// hash-slot migration enabled.
func (n *Node) CreateSlotMigration(ctx context.Context, hs slotstore.HashSlot, to slotstore.GroupID) (slotstore.Task, error) {
	if !n.cfg.EnableHashSlotMigration {
		return slotstore.Task{}, slotstore.Errorf(slotstore.CodePermissionDenied,
			"hash-slot migration is disabled on this node (start it with --enable-hash-slot-migration)")
	}
	id, err := n.proposeControllerTask(ctx, controller.Command{SlotMigrate: &controller.CreateSlotMigration{HashSlot: hs, ToGroup: to}})
	if err != nil {
		return slotstore.Task{}, err
	}
	return n.Task(id)
}

// exportChunkBytes bounds one chunk of a slot copy (one Raft entry on the target).
const exportChunkBytes = 256 << 10

// trySlotStep does one step of a hash-slot migration.
func (n *Node) trySlotStep(ctx context.Context, t slotstore.Task) error {
	hs := *t.HashSlot
	hdr := meta.Header{HashSlot: hs}
	note := func(format string, args ...any) *slotstore.PhaseRecord {
		return &slotstore.PhaseRecord{Phase: t.Phase, Note: fmt.Sprintf(format, args...), Voters: []uint64{}, Learners: []uint64{}}
	}
	slotCmd := func(g slotstore.GroupID, c meta.Command) error {
		res, err := n.proposeToGroup(ctx, g, c)
		if err == nil && !res.OK() {
			err = res.Err()
		}
		return err
	}
	if t.Status == controller.TaskCancelling {
		if err := slotCmd(t.ToGroup, &meta.DropImported{Header: hdr}); err != nil {
			return err
		}
		if err := slotCmd(t.Group, &meta.UnfenceSlot{Header: hdr}); err != nil {
			return err
		}
		return n.advance(ctx, t, "", controller.TaskCancelled, "cancelled", note("imported rows dropped, fence lifted"))
	}
	switch t.Phase {
	case controller.PhaseFence:
		if err := slotCmd(t.Group, &meta.FenceSlot{Header: hdr}); err != nil {
			return err
		}
		return n.advance(ctx, t, controller.PhaseCopy, "", "", note("group %d refuses writes to hash slot %d", t.Group, hs))
	case controller.PhaseCopy:
		// The slot is fenced: its rows no longer change, so a copy from the
		// start is always complete and repeating it after a failover is safe.
		var after []byte
		rows, chunks := 0, 0
		for {
			v, _, err := n.Read(ctx, &meta.ExportSlot{HashSlot: hs, After: after, MaxBytes: exportChunkBytes}, meta.Linearizable)
			if err != nil {
				return err
			}
			ch, ok := v.(*meta.SlotChunk)
			if !ok {
				return fmt.Errorf("export of hash slot %d answered %T", hs, v)
			}
			if len(ch.Rows) > 0 {
				if err := slotCmd(t.ToGroup, &meta.ImportRows{Header: hdr, Rows: ch.Rows}); err != nil {
					return err
				}
				after = ch.Rows[len(ch.Rows)-1].Key
				rows += len(ch.Rows)
				chunks++
			}
			if ch.Done {
				break
			}
		}
		return n.advance(ctx, t, controller.PhaseAcquire, "", "", note("%d rows copied to group %d in %d chunks", rows, t.ToGroup, chunks))
	case controller.PhaseAcquire:
		v, _, err := n.Read(ctx, &meta.ExportSlot{HashSlot: hs, MaxBytes: 1}, meta.Linearizable)
		if err != nil {
			return err
		}
		ch, ok := v.(*meta.SlotChunk)
		if !ok {
			return fmt.Errorf("export of hash slot %d answered %T", hs, v)
		}
		if err := slotCmd(t.ToGroup, &meta.AcquireSlot{Header: hdr, MinRevision: ch.Revision}); err != nil {
			return err
		}
		return n.advance(ctx, t, controller.PhaseSwitch, "", "", note("group %d owns hash slot %d (revision ≥ %d)", t.ToGroup, hs, ch.Revision))
	case controller.PhaseSwitch:
		return n.advance(ctx, t, controller.PhaseRelease, "", "", note("HashToGroup[%d] = %d; route revision +1", hs, t.ToGroup))
	case controller.PhaseRelease:
		if err := slotCmd(t.Group, &meta.ReleaseSlot{Header: hdr}); err != nil {
			return err
		}
		return n.advance(ctx, t, controller.PhaseDone, "", "", note("group %d released hash slot %d and deleted its rows", t.Group, hs))
	}
	return nil
}
