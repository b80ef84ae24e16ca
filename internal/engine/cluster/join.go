package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/lni/dragonboat/v4"
	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/ctrlrecovery"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/clusterversion"
)

// controllerReplica is the node's replica of the controller group: it
// starts it (founding, joining or restarting), keeps the node's role in it,
// registers the node, and proposes commands to it.
type controllerReplica struct{ n *Node }

// The node's role in the controller group is decided once, when the node
// founds or joins the cluster, and kept in a small file: dragonboat needs to
// know whether to start the controller replica as non-voting on every
// restart, before the controller state is readable.
func (r controllerReplica) controllerRole() (ctrlrecovery.Role, error) {
	return ctrlrecovery.ReadRole(r.n.cfg.DataDir)
}

func (r controllerReplica) setControllerRole(role ctrlrecovery.Role) error {
	return ctrlrecovery.WriteRole(r.n.cfg.DataDir, role)
}

// self describes this node for registration.
func (r controllerReplica) self() slotstore.NodeInfo {
	return slotstore.NodeInfo{ID: r.n.cfg.NodeID, RaftAddr: r.n.cfg.RaftAddr, APIAddr: r.n.cfg.APIAddr, PeerAddr: r.n.cfg.PeerAddr}
}

// register asks a running cluster, through any node's API, to admit this
// node (POST /v1/cluster/nodes). It retries refusals that say "try again"
// for up to a minute and gives up at once on a definite refusal.
func (r controllerReplica) register(via string) error {
	body, _ := json.Marshal(r.self())
	url := "http://" + via + "/v1/cluster/nodes"
	client := http.DefaultClient
	if r.n.peerTLS != nil {
		// The cluster's API is HTTPS with the nodes' certificates.
		url = "https://" + via + "/v1/cluster/nodes"
		client = r.n.peerTLS.HTTPClient()
	}
	deadline := time.Now().Add(time.Minute)
	var last error
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		if attempt > 0 {
			select {
			case <-time.After(500 * time.Millisecond):
			case <-r.n.stop:
				return errors.New("cluster: stopped while joining")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set(slotstore.VersionHeader, r.n.cfg.Version.String())
		if r.n.cfg.JoinToken != "" {
			req.Header.Set("Authorization", "Bearer "+r.n.cfg.JoinToken)
		}
		resp, err := client.Do(req)
		if err != nil {
			cancel()
			last = err
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		cancel()
		switch {
		case resp.StatusCode/100 == 2:
			r.n.cfg.Logger.Info("registered with the cluster", "via", via)
			return nil
		case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
			last = fmt.Errorf("%s answered %d: %s", url, resp.StatusCode, msg)
		default:
			return fmt.Errorf("cluster: join refused by %s (%d): %s", url, resp.StatusCode, msg)
		}
	}
	return fmt.Errorf("cluster: could not join through %s: %w", via, last)
}

// RegisterNode admits a node into the running cluster: it records the node
// in the controller (joining), adds it as a non-voting member of the
// controller group so it follows the cluster's intent, and marks it active
// (it can then receive replicas). Every step is idempotent, so a retried
// registration finishes what an interrupted one started. A node that says
// it runs a version older than the cluster's is refused before anything
// is recorded (runs zero: it did not say — an operator's registration).
func (n *Node) RegisterNode(ctx context.Context, info slotstore.NodeInfo, runs slotstore.Version) (slotstore.NodeInfo, error) {
	if info.ID == 0 || info.RaftAddr == "" {
		return info, slotstore.Errorf(slotstore.CodeInvalidArgument, "a node needs an id and a raft address")
	}
	if !runs.IsZero() {
		if err := clusterversion.CanJoin(n.ctrl.Load().ClusterVersion, runs); err != nil {
			return info, fmt.Errorf("node %d may not join: %w", info.ID, err)
		}
	}
	if err := n.ctl.proposeController(ctx, controller.Command{RegisterNode: &controller.RegisterNode{Node: controller.NodeOf(info)}}); err != nil {
		return info, err
	}
	if err := n.ctl.addControllerNonVoting(ctx, info); err != nil {
		return info, err
	}
	if err := n.ctl.proposeController(ctx, controller.Command{SetNodeState: &controller.SetNodeState{ID: info.ID, State: controller.NodeActive}}); err != nil {
		return info, err
	}
	if got, ok := n.ctrl.Load().Nodes[info.ID]; ok {
		return got.Info(), nil
	}
	return info, nil
}

// proposeController replicates one controller command and turns a refusal
// into an error.
func (r controllerReplica) proposeController(ctx context.Context, c controller.Command) error {
	_, err := r.proposeControllerResult(ctx, c)
	return err
}

// proposeControllerResult is proposeController returning the result.
func (r controllerReplica) proposeControllerResult(ctx context.Context, c controller.Command) (controller.Result, error) {
	c.TimeMs = r.n.cfg.Now().UnixMilli()
	b, err := controller.EncodeCommand(c)
	if err != nil {
		return controller.Result{}, err
	}
	res, err := r.syncProposeController(ctx, b)
	if err != nil {
		return controller.Result{}, err
	}
	var out controller.Result
	if err := json.Unmarshal(res.Data, &out); err != nil {
		return out, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable controller result")
	}
	if !out.OK {
		code := out.Code
		if code == "" {
			code = slotstore.CodeInternal
		}
		return out, &slotstore.Error{Code: code, Message: out.Message}
	}
	return out, nil
}

// syncProposeController proposes one encoded controller command and waits
// for this node's replica to apply it. A proposal dragonboat drops was never
// appended (no leader known here, or a leader transfer under way: see
// propose.RaftReplicator), so it is proposed again, with a short growing
// pause, until it lands or ctx ends — an election of the controller group
// lasts a moment and must not fail the operator's request (CI: a replica
// move asked while the controller changed leader got 503 route_not_ready).
// Every other error, a timeout included, is the answer.
func (r controllerReplica) syncProposeController(ctx context.Context, cmd []byte) (sm.Result, error) {
	pause := time.Millisecond
	for {
		res, err := r.n.nh.SyncPropose(ctx, r.n.nh.GetNoOPSession(controller.ShardID), cmd)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, dragonboat.ErrShardNotReady) || !propose.Sleep(ctx, context.Background(), pause) {
			return res, propose.RaftError(err, 0, true)
		}
		pause = min(2*pause, 50*time.Millisecond)
	}
}

// membership is the controller group's membership as this node's replica knows it.
func (r controllerReplica) membership(ctx context.Context) (*dragonboat.Membership, error) {
	m, err := r.n.nh.SyncGetShardMembership(ctx, controller.ShardID)
	if err != nil {
		return nil, propose.RaftError(err, 0, false)
	}
	return m, nil
}

// leader is the controller's leader as last seen (0: unknown).
func (r controllerReplica) leader() slotstore.NodeID { return slotstore.NodeID(r.n.ctrlLeader.Load()) }

// transferLeadership asks the controller's leader to hand its leadership to
// target; whether it moved is seen in leader.
func (r controllerReplica) transferLeadership(target uint64) {
	_ = r.n.nh.RequestLeaderTransfer(controller.ShardID, target)
}

// removeMember takes node id out of the controller group's membership
// (voter or not), unless it is out already.
func (r controllerReplica) removeMember(ctx context.Context, id slotstore.NodeID) error {
	return r.changeMembership(ctx, fmt.Sprintf("removing node %d", id), true, func(m *dragonboat.Membership) (func(uint64) error, error) {
		_, voter := m.Nodes[uint64(id)]
		_, learner := m.NonVotings[uint64(id)]
		if !voter && !learner {
			return nil, nil
		}
		return func(cc uint64) error { return r.n.nh.SyncRequestDeleteReplica(ctx, controller.ShardID, uint64(id), cc) }, nil
	})
}

// addControllerNonVoting adds the node to the controller group unless it is
// already a member.
func (r controllerReplica) addControllerNonVoting(ctx context.Context, info slotstore.NodeInfo) error {
	id := uint64(info.ID)
	return r.changeMembership(ctx, fmt.Sprintf("adding node %d", id), false, func(m *dragonboat.Membership) (func(uint64) error, error) {
		_, voter := m.Nodes[id]
		_, learner := m.NonVotings[id]
		if _, removed := m.Removed[id]; removed {
			return nil, slotstore.Errorf(slotstore.CodeConflict, "node %d was removed from the controller group", info.ID)
		}
		if voter || learner {
			return nil, nil
		}
		return func(cc uint64) error {
			return r.n.nh.SyncRequestAddNonVoting(ctx, controller.ShardID, id, info.RaftAddr, cc)
		}, nil
	})
}

// changeMembership makes one change to the controller group's membership:
// step reads the membership and answers the request that makes the change
// with the config change id read (nil: made already) or a refusal. A stale
// config change id (rejected) or a temporary error is retried a few times;
// mayHaveApplied says whether a failed request may still have been
// applied (propose.RaftError).
func (r controllerReplica) changeMembership(ctx context.Context, what string, mayHaveApplied bool,
	step func(m *dragonboat.Membership) (request func(configChangeID uint64) error, err error)) error {
	for attempt := 0; attempt < 5; attempt++ {
		m, err := r.membership(ctx)
		if err != nil {
			return err
		}
		request, err := step(m)
		if err != nil || request == nil {
			return err
		}
		err = request(m.ConfigChangeID)
		if err == nil {
			return nil
		}
		if !errors.Is(err, dragonboat.ErrRejected) && !dragonboat.IsTempError(err) {
			return propose.RaftError(err, 0, mayHaveApplied)
		}
		if ctx.Err() != nil {
			return propose.RaftError(ctx.Err(), 0, mayHaveApplied)
		}
	}
	return slotstore.Errorf(slotstore.CodeBusy, "controller membership kept changing while %s; retry", what)
}

// Nodes lists the registered nodes.
func (o operator) Nodes() []slotstore.NodeInfo {
	st := o.ctrl.Load()
	out := make([]slotstore.NodeInfo, 0, len(st.Nodes))
	for _, id := range st.NodeIDs() {
		out = append(out, st.Nodes[id].Info())
	}
	return out
}

// Summary is this node's view of the cluster.
func (o operator) Summary() slotstore.ClusterSummary {
	st := o.ctrl.Load()
	snap := o.router.Load()
	s := slotstore.ClusterSummary{ClusterID: st.ClusterID, NodeID: o.id, RouteRevision: snap.Revision(),
		ControllerLeader: o.ctl.leader(), Nodes: len(st.Nodes), Groups: len(st.Groups), Local: localView(o.ctl.n, st),
		ClusterVersion: st.Version(), Version: o.ctl.n.cfg.Version, ControllerApplied: st.AppliedIndex, ControllerDigest: o.ctl.n.ctrlDigest.of(st),
		Disk: o.ctl.n.disk.usage(), Peers: peerView(o.ctl.n, st)}
	for _, id := range st.GroupIDs() {
		if g, ok := snap.Group(id); ok && g.Leader != 0 {
			s.GroupsWithLeader++
		}
	}
	if err := o.ready(); err != nil {
		s.NotReadyReason = err.Error()
	} else {
		s.Ready = true
	}
	return s
}
