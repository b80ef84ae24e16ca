package cluster

import (
	"context"
	"fmt"
	"time"

	"github.com/lni/dragonboat/v4"
	pb "github.com/lni/dragonboat/v4/raftpb"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/engine/raftnet"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/engine/waker"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

// transferer carries out leader transfers of the groups this node leads:
// drained first, waited for, refused when the target does not answer.
type transferer struct {
	cfg      *Config
	nh       *dragonboat.NodeHost
	ctrl     func() *controller.State
	peerAddr func(slotstore.NodeID) string
	peers    *peer.Client
	replicas *replicas.Set
	router   *routing.Router
	heard    *raftnet.Heard
	wakes    *waker.Waker
	attempt  func(landed bool) // counts one attempt
}

// TransferLeader moves group g's leadership from this node (its leader) to
// target's replica (transferer.TransferLeader; the checked transfer an
// operator asks for is package leader's).
func (n *Node) TransferLeader(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID) error {
	return n.xfer.TransferLeader(ctx, g, target)
}

// TransferLeader asks group g's Raft to hand leadership to node target and
// waits until this node observes target as the leader (or ctx ends). The
// request is best effort in Raft: an answer of timeout means the leader did
// not move in time, not that it never will. This node must lead g: only the
// leader knows whether the target answers it, and while Raft transfers it
// drops every proposal, so a transfer toward a replica that leaves the
// leader's requests unanswered for longer than ReachableWithin is refused
// (target_unreachable) before it starts and before each repeat. (Safety checks and the operator API build on this.)
func (x transferer) TransferLeader(ctx context.Context, g slotstore.GroupID, target slotstore.NodeID) error {
	grp, ok := x.ctrl().Groups[g]
	if !ok {
		return slotstore.Errorf(slotstore.CodeNotFound, "group %d does not exist", g)
	}
	replica, ok := grp.Peers[target]
	if !ok {
		replica, ok = movingIn(x.ctrl(), g, target)
	}
	if !ok {
		return slotstore.Errorf(slotstore.CodeConflict, "node %d is not a desired peer of group %d", target, g)
	}
	lg := x.replicas.All()[g]
	if lg == nil {
		return slotstore.Errorf(slotstore.CodeNotLeader, "node %d holds no replica of group %d", x.cfg.NodeID, g)
	}
	shard := controller.ShardOf(g)
	if leader, _, valid, err := x.nh.GetLeaderID(shard); err != nil || !valid || leader != lg.ReplicaID {
		st, _ := x.router.Load().Group(g)
		return &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: st.Leader, LeaderTerm: st.Term,
			RetryAfter: 200 * time.Millisecond, Message: fmt.Sprintf("node %d does not lead group %d: the leader transfers", x.cfg.NodeID, g)}
	}
	reachable := func() error {
		// A target that leaves the leader's requests unanswered is given
		// one more election timeout to answer (on a busy machine an answer
		// comes late; nothing is held meanwhile) before the transfer is
		// refused. Silence alone is no refusal: a quiesced group sends
		// nothing, and the transfer wakes it.
		within := x.cfg.Leadership.ReachableWithin
		giveUp := time.Now().Add(x.cfg.electionTimeout())
		for {
			_, heard := x.heard.Ago(shard, replica)
			wait := x.heard.Unanswered(shard, replica)
			if heard && wait <= within {
				return nil
			}
			if time.Now().Before(giveUp) && propose.Sleep(ctx, context.Background(), 10*time.Millisecond) {
				continue
			}
			e := &slotstore.Error{Code: slotstore.CodeConflict, Message: "leader transfer refused: the target does not answer the leader"}
			detail := fmt.Sprintf("the leader has not heard from node %d (replica %d)", target, replica)
			if heard {
				detail = fmt.Sprintf("node %d (replica %d) has left the leader's requests unanswered for %v (limit %v)", target, replica,
					wait.Round(time.Millisecond), within)
			}
			e.Details = []slotstore.FieldError{{Field: string(policy.ReasonTargetUnreachable), Reason: detail}}
			return e
		}
	}
	term, err := x.drainedTransfer(ctx, g, lg, shard, target, replica, reachable)
	if err != nil {
		return err
	}
	x.router.SetLeader(g, target, term)
	return nil
}

// drainedTransfer moves shard's leadership to replica (on node target) in
// attempts of at most three election timeouts. Each attempt holds the
// group's proposer (new writes wait in its queue instead of being dropped),
// waits until this leader has applied its whole log and the target has
// applied as much — dragonboat lets no replica campaign while it has
// committed entries it has not applied, so under load a target a few
// entries behind would ignore the transfer and Raft would drop proposals
// for an election timeout before giving up — then asks Raft to transfer and
// waits for the target to lead. The held writes go on once it does (to the
// new leader: the replicator sees this node no longer leads), or when the
// attempt ends. check runs before every attempt.
func (x transferer) drainedTransfer(ctx context.Context, g slotstore.GroupID, lg *replicas.Replica, shard uint64, target slotstore.NodeID,
	replica uint64, check func() error) (uint64, error) {
	et := x.cfg.electionTimeout()
	for attempt := 1; ; attempt++ {
		if err := check(); err != nil {
			return 0, err
		}
		actx, cancel := context.WithTimeout(ctx, 3*et)
		release, err := lg.Proposer.Hold(actx, 3*et)
		if err != nil {
			cancel()
			return 0, &slotstore.Error{Code: slotstore.CodeTimeout, Err: err, Message: "the group's writes in flight did not finish in time to transfer"}
		}
		start := time.Now()
		applied := x.waitDrained(actx, g, lg, shard, target)
		// The lease ends before Raft is asked, and only if this replica
		// still leads: asked on a follower, dragonboat would pass the
		// transfer on to the new leader, whose lease nothing revoked.
		x.replicas.TransferAway(shard)
		if leader, _, valid, err := x.nh.GetLeaderID(shard); err != nil || !valid || leader != lg.ReplicaID {
			release()
			cancel()
			return 0, &slotstore.Error{Code: slotstore.CodeNotLeader, RetryAfter: 200 * time.Millisecond,
				Message: fmt.Sprintf("node %d stopped leading group %d before the transfer was asked", x.cfg.NodeID, g)}
		}
		// A quiesced leader is woken first. dragonboat gives up a transfer
		// only in a leader's tick, which a quiesced replica does not run,
		// and ignores every further request while one is pending (and
		// drops proposals): a TimeoutNow lost on its way (the target
		// restarting, a lossy link) left the group in that state until
		// something else woke it (scripts' tests: a restarted node's group
		// without a leader for a minute, the preferred leader never
		// reached).
		x.wakes.Local(g)
		if err := x.nh.RequestLeaderTransfer(shard, replica); err != nil && !dragonboat.IsTempError(err) {
			release()
			cancel()
			return 0, propose.RaftError(err, g, false)
		}
		term, ok := x.waitLeaderIs(actx, shard, replica, et)
		release()
		cancel()
		x.attempt(ok)
		if ok {
			x.cfg.Logger.Debug("leader transfer", "group", g, "target", target, "attempt", attempt, "applied", applied,
				"took", time.Since(start))
			return term, nil
		}
		if ctx.Err() != nil {
			return 0, &slotstore.Error{Code: slotstore.CodeTimeout, Message: "the new leader was not observed in time", Err: ctx.Err()}
		}
		x.cfg.Logger.Warn("leader transfer attempt did not land; again", "group", g, "target", target, "attempt", attempt)
	}
}

// waitDrained waits, within ctx and a short bound, until this replica has
// applied its whole Raft log and node target's replica has applied as much
// (asked over peer RPC). It returns the index reached; a target that does
// not get there in time is transferred to anyway.
func (x transferer) waitDrained(ctx context.Context, g slotstore.GroupID, lg *replicas.Replica, shard uint64, target slotstore.NodeID) uint64 {
	sm := lg.SM()
	lr, err := x.nh.GetLogReader(shard)
	if sm == nil || err != nil {
		return 0
	}
	bound := time.Now().Add(4*time.Duration(x.cfg.HeartbeatRTT)*x.cfg.RTT + 100*time.Millisecond)
	_, last := lr.GetRange()
	pending := func() bool { return unappliedUpdates(sm.AppliedIndex(), last, lr.Entries) }
	for pending() && time.Now().Before(bound) && propose.Sleep(ctx, context.Background(), time.Millisecond) {
	}
	want := sm.AppliedIndex()
	addr := x.peerAddr(target)
	for addr != "" && time.Now().Before(bound) {
		cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		got, err := x.peers.Applied(cctx, addr, g)
		cancel()
		if err == nil && got >= want {
			break
		}
		if !propose.Sleep(ctx, context.Background(), 2*time.Millisecond) {
			break
		}
	}
	return want
}

// unappliedUpdates reports whether the log up to last holds an update entry
// past applied, the state machine's applied index. The state machine sees
// update entries only: a new term's no-op or a configuration change at the
// log's tail is never "applied" by it, and waiting for its index held every
// transfer of a group without a write since its election for the whole
// drain bound (300 ms at the defaults). Past a short tail, or when the
// entries cannot be read, it says yes (the caller waits, bounded).
func unappliedUpdates(applied, last uint64, entries func(lo, hi, maxSize uint64) ([]pb.Entry, error)) bool {
	if applied >= last {
		return false
	}
	if last-applied > 64 {
		return true
	}
	ents, err := entries(applied+1, last+1, 1<<20)
	if err != nil || uint64(len(ents)) < last-applied {
		return true
	}
	for _, e := range ents {
		if e.IsUpdateEntry() {
			return true
		}
	}
	return false
}

// waitLeaderIs polls until replica leads shard (its term) or d has passed.
func (x transferer) waitLeaderIs(ctx context.Context, shard, replica uint64, d time.Duration) (uint64, bool) {
	until := time.Now().Add(d)
	for {
		if leader, term, valid, err := x.nh.GetLeaderID(shard); err == nil && valid && leader == replica {
			return term, true
		}
		if time.Now().After(until) || !propose.Sleep(ctx, context.Background(), time.Millisecond) {
			return 0, false
		}
	}
}

// movingIn returns the replica a running replica move of g is bringing to
// node target once it is a voter that is not yet a desired peer: in the
// remove_old phase, where the move hands the leadership to it before it
// removes the old voter (the desired peers change only at the commit).
func movingIn(st *controller.State, g slotstore.GroupID, target slotstore.NodeID) (uint64, bool) {
	for _, t := range st.Tasks {
		if t.Kind == controller.TaskReplicaMove && t.Group == g && t.To == target && t.NewReplicaID != 0 &&
			t.Status == controller.TaskRunning && t.Phase == controller.PhaseRemoveOld {
			return t.NewReplicaID, true
		}
	}
	return 0, false
}

// awaitTransfer asks shard's Raft to move leadership to replica and waits
// until this node observes it. Raft drops a transfer it cannot finish within
// an election timeout (say the target lagged for a moment), so the request
// is repeated once per election timeout until it lands or ctx ends; before
// each request check (if not nil) must pass.
func (x transferer) awaitTransfer(ctx context.Context, shard, replica uint64, check func() error) (uint64, error) {
	retry := time.Duration(x.cfg.ElectionRTT) * x.cfg.RTT
	var last time.Time
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		leader, term, valid, err := x.nh.GetLeaderID(shard)
		if err == nil && valid && leader == replica {
			return term, nil
		}
		if time.Since(last) >= retry {
			if check != nil {
				if err := check(); err != nil {
					return 0, err
				}
			}
			x.replicas.TransferAway(shard)
			if err := x.nh.RequestLeaderTransfer(shard, replica); err != nil && !dragonboat.IsTempError(err) {
				return 0, propose.RaftError(err, 0, false)
			}
			last = time.Now()
		}
		select {
		case <-ctx.Done():
			return 0, &slotstore.Error{Code: slotstore.CodeTimeout, Message: "the new leader was not observed in time", Err: ctx.Err()}
		case <-t.C:
		}
	}
}
