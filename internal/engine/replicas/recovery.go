package replicas

import (
	"context"
	"errors"
	"fmt"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/raftlog"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Lost-quorum recovery (issue 29), the survivor's side. A group that lost
// a majority of its replicas for good is rebuilt from one survivor, in
// three steps that each survive a crash:
//
//  1. PrepareRecovery (asked by the controller leader): the survivor's
//     replica stops (its Raft log and rows stay), everything its log holds
//     past what it applied is applied — entries it logged but did not know
//     committed included, as etcd's --force-new-cluster commits its whole
//     log: the acknowledged writes a survivor holds are kept — and its
//     rows are rebased (fsm.Rebase: revisions and change-log positions
//     bumped, so that nothing numbered on the lost replicas is numbered
//     again) and marked for the replica id the recovery gives it. From
//     then on the old replica does not start again (laidOutFor).
//  2. The controller records the recovery (controller.RecoverGroup): the
//     survivor's node holds the group as the new replica; every other
//     replica is tombstoned (Want is false for it, wherever it comes back;
//     a restarted node starts no replica before it read the controller's
//     current state: Set.confirmed).
//  3. Follow starts the new replica: its log begins past the rows
//     (startLogPast: raftlog.StartAt, the restore's way), with itself as
//     the only voter; the old replica's Raft data goes. The group elects
//     it and serves again; moves off the dead nodes bring it back to its
//     replication factor (a snapshot each: the log begins past the rows).

// maxTailBytes bounds the log tail a recovery reads and applies; lookBack
// is how many entries before the applied index it reads for their time.
const (
	maxTailBytes = 64 << 20
	lookBack     = 64
	maxUncertain = 1000
)

// Prepared is what PrepareRecovery did: the survivor's old and new
// replica, the index it had applied, the commit its log knew, its last log
// index and term, the index it now stands at (everything its log held,
// applied), and the entries it applied past the commit it knew.
type Prepared struct {
	Group      slotstore.GroupID `json:"group"`
	OldReplica uint64            `json:"old_replica"`
	Replica    uint64            `json:"replica"`
	Applied    uint64            `json:"applied"`
	Commit     uint64            `json:"commit"`
	Last       uint64            `json:"last"`
	Term       uint64            `json:"term"`
	Index      uint64            `json:"index"`
	// Uncertain are the entries applied past the commit the survivor
	// knew: they may not have been committed (nor acknowledged).
	Uncertain []Logged `json:"uncertain,omitempty"`
	// UncertainCount is how many there were (Uncertain lists the first
	// maxUncertain: a report must fit a peer answer).
	UncertainCount int `json:"uncertain_count,omitempty"`
	// LastTimeMs is the time of the last command it applied (0: unknown).
	LastTimeMs int64 `json:"last_time_ms,omitempty"`
}

// Logged is one Raft entry of a log tail: the keys its commands route by
// and the latest time they carry.
type Logged struct {
	Index  uint64   `json:"index"`
	Keys   []string `json:"keys"`
	TimeMs int64    `json:"time_ms,omitempty"`
}

// PrepareRecovery is step 1 (see above) for this node's replica old of
// group g, to become replica next. It refuses while the group has a leader.
func (s *Set) PrepareRecovery(ctx context.Context, g slotstore.GroupID, old, next, bump uint64) (Prepared, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	shard := controller.ShardOf(g)
	p := Prepared{Group: g, OldReplica: old, Replica: next}
	if s.cfg.Log == nil {
		return p, errors.New("replicas: no Raft log to recover from")
	}
	if !s.cfg.NH.HasNodeInfo(shard, old) {
		if laid, ok, _ := fsm.RestoredFor(s.cfg.DB, g); ok && laid == next {
			return p, slotstore.Errorf(slotstore.CodeConflict, "group %d was prepared for replica %d already", g, next)
		}
		return p, slotstore.Errorf(slotstore.CodeNotFound, "node %d holds no replica %d of group %d", s.cfg.NodeID, old, g)
	}
	if r := s.Get(g); r != nil {
		if r.ReplicaID != old {
			return p, slotstore.Errorf(slotstore.CodeConflict, "node %d runs replica %d of group %d, not %d", s.cfg.NodeID, r.ReplicaID, g, old)
		}
		if leader, _, valid, err := s.cfg.NH.GetLeaderID(shard); err == nil && valid && leader != 0 {
			return p, slotstore.Errorf(slotstore.CodeFailedPrecondition, "group %d has a leader (replica %d): its quorum is not lost", g, leader)
		}
		if err := s.stopKeeping(ctx, r); err != nil {
			return p, err
		}
	}
	// The rows are marked for the new replica before anything changes
	// them: a crash from here on leaves rows the old replica never
	// restarts over (its log would disagree with them), and preparing
	// again goes on from where it stopped.
	if err := fsm.MarkRestored(s.cfg.DB, g, next); err != nil {
		return p, err
	}
	m := fsm.New(fsm.Config{Group: g, DB: s.cfg.DB, WatchRecords: s.cfg.WatchRecords, WatchAge: s.cfg.WatchAge})
	applied, err := m.Open(nil)
	if err != nil {
		return p, err
	}
	p.Applied = applied
	// From a few entries before the applied index: the time of the last
	// command applied is when the writes that may be lost begin.
	tail, err := s.cfg.Log.ReadTail(shard, old, applied-min(applied, lookBack), maxTailBytes)
	if err != nil {
		return p, err
	}
	if !tail.Complete {
		return p, fmt.Errorf("replicas: the log of replica %d holds more than %d bytes past index %d", old, maxTailBytes, applied)
	}
	p.Commit, p.Last, p.Term = tail.Commit, tail.Last, tail.Term
	var entries []sm.Entry
	for _, e := range tail.Entries {
		cmd, ok, err := raftlog.Payload(e)
		if err != nil {
			return p, err
		}
		if !ok {
			continue
		}
		l := logged(e.Index, cmd)
		p.LastTimeMs = max(p.LastTimeMs, l.TimeMs)
		if e.Index <= applied {
			continue
		}
		entries = append(entries, sm.Entry{Index: e.Index, Cmd: cmd})
		if e.Index > tail.Commit {
			if len(p.Uncertain) < maxUncertain {
				p.Uncertain = append(p.Uncertain, l)
			}
			p.UncertainCount++
		}
	}
	if len(entries) > 0 {
		if _, err := m.Update(entries); err != nil {
			return p, fmt.Errorf("replicas: apply the log tail of replica %d: %w", old, err)
		}
	}
	// An entry that carries nothing for the state machine (a new leader's
	// empty entry, a membership change) is held all the same: the
	// recovered index is the survivor's last entry, not its last command
	// (else a leader's empty entry past it reads as a lost entry).
	p.Index = max(m.AppliedIndex(), tail.Last)
	if p.Index == 0 {
		return p, slotstore.Errorf(slotstore.CodeFailedPrecondition, "replica %d of group %d applied nothing: nothing to recover from", old, g)
	}
	if err := m.Rebase(fsm.Rebase{Bump: bump, Replica: next, Index: p.Index}); err != nil {
		return p, err
	}
	s.cfg.Logger.Warn("group prepared for a lost-quorum recovery", "group", g, "replica", old, "new_replica", next,
		"applied", applied, "commit", tail.Commit, "index", p.Index)
	return p, nil
}

// stopKeeping stops replica r and waits until its state machine is closed,
// keeping its Raft log and rows (under s.mu).
func (s *Set) stopKeeping(ctx context.Context, r *Replica) error {
	s.publish(func(m map[slotstore.GroupID]*Replica) { delete(m, r.Group) })
	s.disrupt.forget(controller.ShardOf(r.Group))
	err := s.cfg.NH.StopReplica(controller.ShardOf(r.Group), r.ReplicaID)
	r.Proposer.Close()
	r.Reads.Close()
	s.stopped[r.Group] = time.Now()
	if err != nil {
		return err
	}
	if m := r.SM(); m != nil {
		select {
		case <-m.Closed():
		case <-ctx.Done():
			return fmt.Errorf("replicas: replica %d of group %d did not stop: %w", r.ReplicaID, r.Group, ctx.Err())
		}
	}
	return nil
}

// logged lists the route keys and the latest time of an entry's commands.
func logged(index uint64, cmd []byte) Logged {
	l := Logged{Index: index}
	cmds, err := meta.DecodeEntry(cmd)
	if err != nil {
		return l
	}
	for _, b := range cmds {
		c, err := meta.DecodeCommand(b)
		if err != nil {
			continue
		}
		l.Keys = append(l.Keys, c.RouteKey())
		l.TimeMs = max(l.TimeMs, c.Head().TimeMs)
	}
	return l
}

// laidOutFor says whether group g's rows here were laid out for replica
// (a recovery prepared them): then it starts with a log that begins past
// them. A replica the rows were not laid out for does not restart over
// them: they are another replica's now.
func (s *Set) laidOutFor(g slotstore.GroupID, replica uint64, restarted bool) (bool, error) {
	laid, ok, err := fsm.RestoredFor(s.cfg.DB, g)
	if err != nil || !ok {
		return false, err
	}
	switch {
	case laid == replica && restarted:
		return false, fsm.ClearRestored(s.cfg.DB, g) // a restored replica: its log began when its node first opened
	case laid == replica:
		return true, nil
	case restarted:
		return false, fmt.Errorf("replicas: the rows of group %d were prepared for replica %d by a recovery: replica %d does not restart over them", g, laid, replica)
	}
	return false, nil // a new replica of another id: clearStale removes them
}

// startLogPast begins the log of replica, for which g's rows were laid out,
// past them: the only voters are the group's peers that were not
// tombstoned. The Raft data of other replicas of g here goes first (on
// the controller's current word: clearStale keeps the rows), and the
// rows' mark with it.
func (s *Set) startLogPast(st *controller.State, grp *controller.Group, replica uint64) error {
	g := grp.ID
	if err := s.clearStale(context.Background(), g, replica); err != nil {
		return fmt.Errorf("clear the Raft data of group %d's earlier replicas: %w", g, err)
	}
	index, err := fsm.AppliedIn(s.cfg.DB, g)
	if err != nil {
		return err
	}
	members := map[uint64]string{}
	for node, rid := range grp.Peers {
		if _, dead := st.Tombstoned(g, rid); dead {
			continue
		}
		if info, ok := st.Nodes[node]; ok {
			members[rid] = info.RaftAddr
		}
	}
	rec, ok := st.RecoveredAs(g, replica)
	if !ok {
		return fmt.Errorf("replicas: the rows of group %d are laid out for replica %d, which no recovery recorded", g, replica)
	}
	term := rec.Term
	if err := s.cfg.Log.StartAt(raftlog.Start{Shard: controller.ShardOf(g), Replica: replica, Index: index, Term: term, Members: members}); err != nil {
		return err
	}
	if err := fsm.ClearRestored(s.cfg.DB, g); err != nil {
		return err
	}
	s.cfg.Logger.Warn("recovered group's log begins past its rows", "group", g, "replica", replica, "index", index, "voters", len(members))
	return nil
}

// Survivor is what a replica of a group holds, from its own log and rows,
// whether it runs or a recovery stopped it: the recovery picks the one
// with the longest log.
type Survivor struct {
	Group   slotstore.GroupID `json:"group"`
	Replica uint64            `json:"replica"`
	Applied uint64            `json:"applied"`
	Commit  uint64            `json:"commit"`
	Last    uint64            `json:"last"`
	Term    uint64            `json:"term"`
	// Prepared is the replica id a recovery marked its rows for (0: none).
	Prepared uint64 `json:"prepared,omitempty"`
}

// SurvivorStatus reads what this node's replica of g holds (not_found
// when the node holds none).
func (s *Set) SurvivorStatus(g slotstore.GroupID, replica uint64) (Survivor, error) {
	v := Survivor{Group: g, Replica: replica}
	if s.cfg.Log == nil || !s.cfg.NH.HasNodeInfo(controller.ShardOf(g), replica) {
		return v, slotstore.Errorf(slotstore.CodeNotFound, "node %d holds no replica %d of group %d", s.cfg.NodeID, replica, g)
	}
	applied, err := fsm.AppliedIn(s.cfg.DB, g)
	if err != nil {
		return v, err
	}
	tail, err := s.cfg.Log.ReadTail(controller.ShardOf(g), replica, ^uint64(0)-1, 0)
	if err != nil {
		return v, err
	}
	v.Applied, v.Commit, v.Last, v.Term = applied, tail.Commit, tail.Last, tail.Term
	if laid, ok, err := fsm.RestoredFor(s.cfg.DB, g); err == nil && ok && laid != replica {
		v.Prepared = laid
	}
	return v, nil
}
