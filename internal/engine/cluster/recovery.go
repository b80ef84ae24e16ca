package cluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/replicas"
	"github.com/slotmeta/slotmeta/internal/engine/restore"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// recoverer is the node's lost-quorum recovery (slotstore.Recovery, issue
// 29): the node asked picks the most advanced surviving replica from the
// controller leader's view, has its node prepare it (the recover-prepare
// endpoint: replicas.Set.PrepareRecovery), records the recovery in the
// controller (controller.RecoverGroup), and reports what may be lost.
// One recovery at a time through a node; the reports of the last ones
// are kept for the console.
type recoverer struct {
	n       *Node
	run     sync.Mutex // one recovery at a time through this node
	mu      sync.Mutex // reports
	reports []slotstore.RecoveryReport
}

// maxReports bounds the reports a node keeps; prepareTimeout the
// survivor's preparation (its replica stopped, its log's tail applied).
// termMargin is how far past the highest term seen a recovered group's log
// begins (routers and clients ignore a leader of an older term than one
// they saw).
const (
	maxReports     = 20
	prepareTimeout = 30 * time.Second
	statusTimeout  = 2 * time.Second
	termMargin     = 100
)

var _ slotstore.Recovery = (*recoverer)(nil)

// prepareRequest is the body of recover-prepare.
type prepareRequest struct {
	Group      slotstore.GroupID `json:"group"`
	OldReplica uint64            `json:"old_replica"`
	Replica    uint64            `json:"replica"`
	Bump       uint64            `json:"bump"`
}

// RecoverGroup rebuilds group g from its most advanced surviving replica.
func (r *recoverer) RecoverGroup(ctx context.Context, g slotstore.GroupID, acceptDataLoss bool) (slotstore.RecoveryReport, error) {
	rep := slotstore.RecoveryReport{Group: g}
	if !acceptDataLoss {
		return rep, slotstore.Errorf(slotstore.CodeInvalidArgument,
			"a lost-quorum recovery may lose acknowledged writes: confirm that you accept it (accept_data_loss)")
	}
	if !r.run.TryLock() {
		return rep, slotstore.Errorf(slotstore.CodeConflict, "a recovery is running through node %d", r.n.cfg.NodeID)
	}
	defer r.run.Unlock()
	// The controller's current word (the next replica id must be the one
	// the command will find), within a request's bound.
	sctx, cancel := context.WithTimeout(ctx, r.n.cfg.RequestTimeout)
	st, err := backupHostOf(r.n).ControllerState(sctx)
	cancel()
	if err != nil {
		return rep, err
	}
	grp, ok := st.Groups[g]
	if !ok {
		return rep, slotstore.Errorf(slotstore.CodeNotFound, "group %d does not exist", g)
	}
	for _, t := range st.TasksNewestFirst() {
		if (t.Group == g || t.ToGroup == g) && t.Kind != controller.TaskReplicaMove &&
			(t.Status == controller.TaskRunning || t.Status == controller.TaskCancelling || t.Status == controller.TaskFailed) {
			return rep, slotstore.Errorf(slotstore.CodeFailedPrecondition, "task %d (%s) moves hash slots of group %d: finish or cancel it first", t.ID, t.Kind, g)
		}
	}
	vctx, cancel := context.WithTimeout(ctx, r.n.cfg.RequestTimeout)
	view, err := r.n.leader.Group(vctx, g)
	cancel()
	if err != nil {
		return rep, err
	}
	fresh := func(rv slotstore.ReplicaView) bool {
		return rv.ReportAgeMs >= 0 && rv.ReportAgeMs <= r.n.cfg.UnreachableAfter.Milliseconds()
	}
	alive := 0
	for _, rv := range view.Replicas {
		if grp.Peers[rv.Node] == rv.ReplicaID && fresh(rv) {
			alive++
		}
	}
	if 2*alive > len(grp.Peers) {
		return rep, slotstore.Errorf(slotstore.CodeFailedPrecondition,
			"group %d: %d of its %d replicas report: its quorum is not lost (a recovery is for a group that lost a majority for good)", g, alive, len(grp.Peers))
	}
	// The survivor: of the replicas whose nodes answer — running, or
	// stopped by an earlier attempt that was never recorded — the one with
	// the longest log.
	var survivor *replicas.Survivor
	var survivorNode slotstore.NodeID
	for node, sv := range r.survivors(ctx, st, grp) {
		if survivor == nil || sv.Last > survivor.Last || (sv.Last == survivor.Last && sv.Applied > survivor.Applied) {
			survivor, survivorNode = &sv, node
		}
	}
	if survivor == nil {
		return rep, slotstore.Errorf(slotstore.CodeFailedPrecondition, "group %d: no replica of it answers: nothing to recover from (restore a backup)", g)
	}
	req := prepareRequest{Group: g, OldReplica: survivor.Replica, Replica: st.NextReplicaID, Bump: restore.DefaultBump}
	// From here on the caller leaving does not stop it: a prepared survivor
	// is recorded, or the error says to ask again.
	ctx = context.WithoutCancel(ctx)
	pctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	p, err := r.prepare(pctx, survivorNode, req)
	cancel()
	if err != nil {
		return rep, fmt.Errorf("prepare node %d's replica %d: %w", survivorNode, survivor.Replica, err)
	}
	rep = r.report(st, view, survivorNode, p)
	// The new log's term: past every term the group was seen at, with room
	// for elections no report showed before the replicas were lost.
	term := max(p.Term, view.Term)
	for _, rv := range view.Replicas {
		term = max(term, rv.Term)
	}
	term += termMargin
	cctx, cancel := context.WithTimeout(ctx, r.n.cfg.RequestTimeout)
	defer cancel()
	if _, err := r.n.ctl.proposeControllerResult(cctx, controller.Command{RecoverGroup: &controller.RecoverGroup{Group: g, Node: survivorNode,
		OldReplica: p.OldReplica, Replica: p.Replica, Index: p.Index, Term: term, Lost: rep.Message}}); err != nil {
		return rep, fmt.Errorf("record the recovery of group %d (node %d's replica is prepared; ask again): %w", g, survivorNode, err)
	}
	r.mu.Lock()
	r.reports = append(r.reports, rep)
	if len(r.reports) > maxReports {
		r.reports = slices.Delete(r.reports, 0, len(r.reports)-maxReports)
	}
	r.mu.Unlock()
	r.n.cfg.Logger.Warn("group recovered from a lost quorum", "group", g, "node", survivorNode, "replica", p.Replica, "index", p.Index, "report", rep.Message)
	return rep, nil
}

// survivors asks every desired peer's node of grp, side by side and
// briefly, what its replica holds (recover-status); the ones that answer.
func (r *recoverer) survivors(ctx context.Context, st *controller.State, grp *controller.Group) map[slotstore.NodeID]replicas.Survivor {
	out := map[slotstore.NodeID]replicas.Survivor{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for node, rid := range grp.Peers {
		if _, dead := st.Tombstoned(grp.ID, rid); dead {
			continue
		}
		wg.Go(func() {
			qctx, cancel := context.WithTimeout(ctx, statusTimeout)
			defer cancel()
			sv, err := r.status(qctx, node, survivorRequest{Group: grp.ID, Replica: rid})
			if err != nil {
				r.n.cfg.Logger.Info("recovery: a replica does not answer", "group", grp.ID, "node", node, "err", err)
				return
			}
			mu.Lock()
			out[node] = sv
			mu.Unlock()
		})
	}
	wg.Wait()
	return out
}

// survivorRequest is the body of recover-status.
type survivorRequest struct {
	Group   slotstore.GroupID `json:"group"`
	Replica uint64            `json:"replica"`
}

// status asks node what its replica holds (here or over peer RPC).
func (r *recoverer) status(ctx context.Context, node slotstore.NodeID, req survivorRequest) (replicas.Survivor, error) {
	if node == r.n.cfg.NodeID {
		return r.n.replicas.SurvivorStatus(req.Group, req.Replica)
	}
	var sv replicas.Survivor
	return sv, r.call(ctx, node, "recover-status", req, &sv)
}

// call posts body to node's peer endpoint and decodes the answer into out.
func (r *recoverer) call(ctx context.Context, node slotstore.NodeID, endpoint string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, _, err := r.n.peers.Call(ctx, http.MethodPost, r.n.dispatch.PeerAddrOf(node), endpoint, b, nil)
	if err != nil {
		return err
	}
	raw, err := peer.ReadBody(resp)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}

// prepare has node prepare its replica (here or over peer RPC).
func (r *recoverer) prepare(ctx context.Context, node slotstore.NodeID, req prepareRequest) (replicas.Prepared, error) {
	if node == r.n.cfg.NodeID {
		return r.n.replicas.PrepareRecovery(ctx, req.Group, req.OldReplica, req.Replica, req.Bump)
	}
	var p replicas.Prepared
	return p, r.call(ctx, node, "recover-prepare", req, &p)
}

// serveJSON is a recovery endpoint: a JSON request (at most 4 KiB) in,
// do's answer or error out.
func serveJSON[Req, Resp any](what string, do func(context.Context, Req) (Resp, error)) peer.HandlerFunc {
	return func(ctx context.Context, w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
			peer.WriteError(w, http.StatusBadRequest, slotstore.Wrap(slotstore.CodeInvalidArgument, err, what+" request"))
			return
		}
		out, err := do(ctx, req)
		if err != nil {
			peer.WriteError(w, peer.StatusOf(err), err)
			return
		}
		peer.WriteJSON(w, out)
	}
}

// register adds the recovery's endpoints to the node's peer RPC.
func (r *recoverer) register(s *peer.Server) {
	s.Handle(http.MethodPost, "recover-prepare", serveJSON("recover-prepare", func(ctx context.Context, pr prepareRequest) (replicas.Prepared, error) {
		return r.n.replicas.PrepareRecovery(ctx, pr.Group, pr.OldReplica, pr.Replica, pr.Bump)
	}))
	s.Handle(http.MethodPost, "recover-status", serveJSON("recover-status", func(_ context.Context, sr survivorRequest) (replicas.Survivor, error) {
		return r.n.replicas.SurvivorStatus(sr.Group, sr.Replica)
	}))
}

// report says what the recovery did and what may be lost.
func (r *recoverer) report(st *controller.State, view slotstore.GroupView, node slotstore.NodeID, p replicas.Prepared) slotstore.RecoveryReport {
	grp := st.Groups[p.Group]
	rep := slotstore.RecoveryReport{Group: p.Group, Node: node, OldReplica: p.OldReplica, Replica: p.Replica, RecoveredIndex: p.Index,
		SurvivorApplied: p.Applied, SurvivorCommit: p.Commit, SurvivorLast: p.Last, HighestKnown: max(p.Commit, p.Index), HighestKnownBy: node,
		HashSlots: []slotstore.HashSlot{}}
	for _, n := range grp.PeerNodes() {
		rep.Tombstoned = append(rep.Tombstoned, slotstore.TombstonedReplica{Node: n, Replica: grp.Peers[n]})
	}
	now := r.n.cfg.Now().UnixMilli()
	for _, rv := range view.Replicas {
		if rv.AppliedIndex > rep.HighestKnown {
			rep.HighestKnown, rep.HighestKnownBy = rv.AppliedIndex, rv.Node
		}
		if rv.AppliedIndex > p.Index && rv.ReportAgeMs >= 0 {
			rep.LostToMs = max(rep.LostToMs, now-rv.ReportAgeMs)
		}
	}
	// What a controller leader before this one saw (its observations are
	// gone with it): the group's recorded high-water mark.
	if m, ok := st.HighWater[p.Group]; ok && m.Index > rep.HighestKnown {
		rep.HighestKnown, rep.HighestKnownBy = m.Index, m.Node
		if m.Index > p.Index {
			rep.LostToMs = max(rep.LostToMs, m.AtMs)
		}
	}
	for s, owner := range st.HashToGroup {
		if owner == p.Group {
			rep.HashSlots = append(rep.HashSlots, slotstore.HashSlot(s))
		}
	}
	for _, l := range p.Uncertain {
		rep.Uncertain = append(rep.Uncertain, slotstore.RecoveredEntry{Index: l.Index, Keys: l.Keys, TimeMs: l.TimeMs})
	}
	if rep.HighestKnown > p.Index {
		rep.MayBeLost, rep.LostFrom, rep.LostTo, rep.LostFromMs = true, p.Index+1, rep.HighestKnown, p.LastTimeMs
		rep.Message = fmt.Sprintf("entries %d..%d of group %d (hash slots %v) were committed on replicas that are gone and are lost; "+
			"no surviving log holds them, so their keys are unknown", rep.LostFrom, rep.LostTo, p.Group, rep.HashSlots)
	} else {
		rep.Message = fmt.Sprintf("nothing known committed is lost: the survivor held every entry any replica was seen to apply (up to %d)", rep.HighestKnown)
	}
	if p.UncertainCount > 0 {
		rep.Message += fmt.Sprintf("; %d entries the survivor logged without knowing them committed were applied (the first %d listed)",
			p.UncertainCount, len(rep.Uncertain))
	}
	return rep
}

// Recoveries are the reports of the recoveries made through this node,
// newest first.
func (r *recoverer) Recoveries() []slotstore.RecoveryReport {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.reports)
	slices.Reverse(out)
	return out
}
