package dispatch

import (
	"context"
	"errors"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/heat"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// The write path: a command to the leader of its group, here or one hop away.

// Propose replicates cmd through the group owning its route key's hash slot.
// If this node is that group's leader the command goes to the local
// proposer; otherwise it is forwarded to the leader over peer RPC (one hop:
// the leader serves it or refuses with a hint). A not_leader answer with a
// newer hint is followed at once, at most MaxForwardHops times; a hint that
// carries a term also records the leader in the router, which is a leader
// change like any other: the write goes to the newest leader while the
// hints are news, at most maxProposeRounds rounds within LeaderWait. A
// refusal that is no news is the answer (testdata/forward shows each
// case). Only refusals that prove the command was not proposed are
// followed — or, for a command carrying an Idempotency-Key, whose replay
// the group answers from its first result, also a forward cut short by a
// leader change — so nothing is applied twice by forwarding.
//
// While the group has no leader known here (an election), or the leader
// cannot be reached and the command was not sent, the write waits for the
// next leader change — at most LeaderWait in all, within ctx — and goes to
// the new leader, instead of failing at once: a client sees an election as
// latency, not as an error, when it ends in time. A command with an
// Idempotency-Key does the same after an unknown outcome (a connection lost
// with the old leader, say).
func (d *Dispatcher) Propose(ctx context.Context, cmd meta.Command) (meta.Result, slotstore.Route, error) {
	hs := slotstore.HashSlotOfString(cmd.RouteKey())
	h := cmd.Head()
	h.HashSlot = hs
	if heat.Counted(ctx) {
		if sw, ok := cmd.(*meta.SlotWrites); ok {
			for _, s := range sw.PartSlots() {
				d.cfg.Heat.Write(s)
			}
		} else {
			d.cfg.Heat.Write(hs)
		}
	}
	change, route, err := d.resolveWatching(hs)
	if route.GroupID == 0 {
		d.cfg.Proposal(route.GroupID, slotstore.ErrorCode(err))
		return meta.Result{}, route, err
	}
	// Encoded once here, checked against the codec limits (encodeCommand).
	enc, eerr := encodeCommand(cmd)
	if eerr != nil {
		d.cfg.Proposal(route.GroupID, slotstore.ErrorCode(eerr))
		return meta.Result{}, route, eerr
	}
	idem := meta.Idempotent(cmd)
	waitUntil := time.Now().Add(d.cfg.LeaderWait)
	target := route.LeaderNodeID
	var res meta.Result
	for hop, rounds := 0, 0; rounds < maxProposeRounds; rounds++ {
		if target == 0 {
			if err == nil {
				err = slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", route.GroupID)
			}
		} else if target == d.cfg.NodeID {
			res, route, err = d.proposeLocal(ctx, cmd, enc, 0)
		} else {
			res, route, err = d.forwardPropose(ctx, target, enc, route, idem)
		}
		if next, ok := d.followHint(route.GroupID, target, err); ok && hop < d.cfg.MaxForwardHops {
			target = next
			hop++
			continue
		}
		// Wait for a new leader, and go to it, when the write was not
		// proposed for want of a reachable leader — or, carrying an
		// Idempotency-Key, when its outcome is unknown (its replay is
		// answered from the first result, so sending it again is safe).
		if unreached(err) && ctx.Err() == nil { // not the caller's own deadline
			d.wake(route.GroupID, target)
		}
		again := definitelyLeaderless(err) || idem && slotstore.ErrorCode(err) == slotstore.CodeTimeout
		if !again || !awaitLeaderChange(ctx, change, waitUntil) {
			break
		}
		change, route, err = d.resolveWatching(hs)
		target = route.LeaderNodeID
	}
	code := slotstore.ErrorCode(err)
	if err == nil {
		code = res.Code
	}
	d.cfg.Proposal(route.GroupID, code)
	return res, route, err
}

// maxProposeRounds bounds the attempts of one Propose (hint follows and
// waits for a leader together); time bounds them first.
const maxProposeRounds = 16

// resolveWatching resolves hs and returns, taken before the resolve, the
// context its group's next leader change cancels.
func (d *Dispatcher) resolveWatching(hs slotstore.HashSlot) (context.Context, slotstore.Route, error) {
	route, _ := d.cfg.Router.Load().ResolveSlot(hs)
	change := d.cfg.Router.LeaderChange(route.GroupID)
	route, err := d.cfg.Router.Load().ResolveSlot(hs)
	return change, route, err
}

// unreached: err says the group's leader could not be reached (none known,
// or it did not answer).
func unreached(err error) bool {
	c := slotstore.ErrorCode(err)
	return err != nil && (c == slotstore.CodeRouteNotReady || c == slotstore.CodeTimeout)
}

func (d *Dispatcher) wake(g slotstore.GroupID, leader slotstore.NodeID) {
	if d.cfg.Wake != nil && g != 0 {
		d.cfg.Wake(g, leader)
	}
}

// definitelyLeaderless reports an error that says the write was not
// proposed because no reachable leader took it: no leader known, the
// leader's node unreachable before anything was sent, a replica not
// running, dropped by Raft until the deadline.
func definitelyLeaderless(err error) bool {
	c := slotstore.ErrorCode(err)
	return err != nil && (c == slotstore.CodeRouteNotReady || c == slotstore.CodeNotLeader)
}

// awaitLeaderChange waits for change (a leader change of the group) until
// ctx ends or until passes; it reports whether the change came in time.
func awaitLeaderChange(ctx, change context.Context, until time.Time) bool {
	d := time.Until(until)
	if d <= 0 || ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-change.Done():
		return ctx.Err() == nil
	case <-ctx.Done():
	case <-t.C:
	}
	return false
}

// followHint decides whether a refusal from target points somewhere new. It
// records the hint in the router (the refusing node saw a newer leader).
func (d *Dispatcher) followHint(g slotstore.GroupID, target slotstore.NodeID, err error) (slotstore.NodeID, bool) {
	var se *slotstore.Error
	if err == nil || !errors.As(err, &se) || se.Code != slotstore.CodeNotLeader {
		return 0, false
	}
	if se.LeaderHint == 0 || se.LeaderHint == target {
		return 0, false
	}
	if se.LeaderTerm > 0 && g != 0 {
		d.cfg.Router.SetLeader(g, se.LeaderHint, se.LeaderTerm)
	}
	return se.LeaderHint, true
}

// proposeLocal serves a command on this node: only if the router says this
// node leads the group; otherwise not_leader with the leader it knows. The
// group is the one owning the command's hash slot, unless group is given
// (not 0: hash-slot migration commands address a group explicitly). enc,
// when set, is the command encoded already (checked by the sender, or
// received from it): the leader stamps its time on those bytes instead of
// encoding the command again.
func (d *Dispatcher) proposeLocal(ctx context.Context, cmd meta.Command, enc []byte, group slotstore.GroupID) (meta.Result, slotstore.Route, error) {
	hs := cmd.Head().HashSlot
	snap := d.cfg.Router.Load()
	route, err := snap.ResolveSlot(hs)
	if group != 0 {
		st, _ := snap.Group(group)
		route = slotstore.Route{HashSlot: hs, GroupID: group, LeaderNodeID: st.Leader, LeaderTerm: st.Term,
			ConfigEpoch: st.ConfigEpoch, RouteRevision: snap.Revision()}
		err = nil
		if st.Leader == 0 {
			err = slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", group)
		}
	}
	if err != nil {
		return meta.Result{}, route, err
	}
	lg := d.cfg.Local.Replica(route.GroupID)
	if route.LeaderNodeID != d.cfg.NodeID || lg == nil {
		return meta.Result{}, route, &slotstore.Error{Code: slotstore.CodeNotLeader, LeaderHint: route.LeaderNodeID,
			LeaderTerm: route.LeaderTerm, RetryAfter: 200 * time.Millisecond, Message: "this node does not lead the group"}
	}
	if d.cfg.Refuse != nil {
		if err := d.cfg.Refuse(); err != nil {
			return meta.Result{}, route, err
		}
	}
	now := d.cfg.Now().UnixMilli()
	cmd.Head().TimeMs = now
	if enc == nil {
		if enc, err = encodeCommand(cmd); err != nil {
			return meta.Result{}, route, err
		}
	} else if enc, err = meta.StampTime(enc, now); err != nil {
		return meta.Result{}, route, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "undecodable command")
	}
	res, err := lg.Submit(ctx, enc)
	if err == nil && (res.Code == slotstore.CodeWrongGroup || res.Code == slotstore.CodeSlotMigrating) {
		// The slot moved, or is moving, under us: the client retries (and
		// re-resolves once the new table arrives).
		err = &slotstore.Error{Code: res.Code, Message: res.Message, RouteRevision: route.RouteRevision, RetryAfter: 200 * time.Millisecond}
	}
	return res, route, err
}

// ProposeToGroup replicates a command through group g itself (its leader,
// here or one peer hop away), whatever the routing table says of its slot.
func (d *Dispatcher) ProposeToGroup(ctx context.Context, g slotstore.GroupID, cmd meta.Command) (meta.Result, error) {
	st, _ := d.cfg.Router.Load().Group(g)
	if st.Leader == 0 {
		return meta.Result{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", g)
	}
	if st.Leader == d.cfg.NodeID {
		res, _, err := d.proposeLocal(ctx, cmd, nil, g)
		return res, err
	}
	addr := d.PeerAddrOf(st.Leader)
	if addr == "" {
		return meta.Result{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "the peer address of node %d is unknown", st.Leader)
	}
	enc, err := encodeCommand(cmd)
	if err != nil {
		return meta.Result{}, err
	}
	res, _, _, err := d.cfg.Peers.Propose(ctx, addr, enc, g)
	return res, err
}

// encodeCommand encodes cmd. The encoder checks every limit the replicas'
// decoder does, so a field over one is the caller's mistake
// (invalid_argument), not a poisoned log entry.
func encodeCommand(cmd meta.Command) ([]byte, error) {
	enc, err := meta.EncodeCommand(cmd)
	if err != nil {
		return nil, slotstore.Wrap(slotstore.CodeInvalidArgument, err, "command exceeds a codec limit")
	}
	return enc, nil
}
