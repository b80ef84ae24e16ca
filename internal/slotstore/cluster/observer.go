package cluster

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"
	"sync"
	"time"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/controller"
)

// observer keeps the latest status report of every node. Only the
// controller leader polls (once per ObserveInterval); the others ask it.
type observer struct {
	mu      sync.Mutex
	reports map[slotstore.NodeID]report
	health  healthBook // reachability streaks while this node leads the controller (health.go)
}

type report struct {
	status     slotstore.NodeStatus
	receivedAt time.Time
}

func newObserver() *observer {
	return &observer{reports: map[slotstore.NodeID]report{}, health: healthBook{tracks: map[slotstore.NodeID]*nodeTrack{}}}
}

// isControllerLeader reports whether this node leads the controller group.
func (n *Node) isControllerLeader() bool { return n.ctrlLeader.Load() == uint64(n.cfg.NodeID) }

// observeLoop polls the nodes while this node leads the controller, then
// runs the reconciler. It is owned by the Node and ends with it.
func (n *Node) observeLoop() {
	defer n.bg.Done()
	if n.cfg.ObserveInterval < 0 {
		return // driven by tests through ObserveOnce / ReconcileOnce
	}
	t := time.NewTicker(n.cfg.ObserveInterval)
	defer t.Stop()
	for {
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
		if !n.isControllerLeader() {
			n.obs.stepDown()
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), n.cfg.ObserveInterval)
		n.ObserveOnce(ctx)
		cancel()
		n.ReconcileOnce(n.cfg.Now())
		tctx, tcancel := context.WithTimeout(context.Background(), 2*n.cfg.RequestTimeout)
		n.TasksOnce(tctx)
		tcancel()
	}
}

// ObserveOnce collects one status report from every registered node
// (concurrently; a node that does not answer within ctx keeps its last one).
func (n *Node) ObserveOnce(ctx context.Context) {
	st := n.ctrl.Load()
	n.obs.lead(n.cfg.Now())
	defer func() { n.obs.updateHealth(n.cfg.Now(), n.registeredNodes(), n.cfg.UnreachableAfter) }()
	var wg sync.WaitGroup
	for _, id := range st.NodeIDs() {
		node := st.Nodes[id]
		if node.State == controller.NodeRemoved {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var status slotstore.NodeStatus
			if id == n.cfg.NodeID {
				status = n.LocalStatus(ctx)
			} else {
				if node.PeerAddr == "" {
					return
				}
				resp, _, err := n.peers.call(ctx, http.MethodGet, node.PeerAddr, "status", nil, nil)
				if err != nil {
					return
				}
				body, err := readBody(resp)
				if err != nil || json.Unmarshal(body, &status) != nil {
					return
				}
			}
			n.obs.mu.Lock()
			n.obs.reports[id] = report{status: status, receivedAt: n.cfg.Now()}
			n.obs.mu.Unlock()
		}()
	}
	wg.Wait()
}

// registeredNodes are the nodes the controller lists, removed ones left out.
func (n *Node) registeredNodes() []slotstore.NodeID {
	st := n.ctrl.Load()
	var out []slotstore.NodeID
	for _, id := range st.NodeIDs() {
		if st.Nodes[id].State != controller.NodeRemoved {
			out = append(out, id)
		}
	}
	return out
}

// NodeHealth returns every registered node's reachability as the
// controller leader observes it (asked over peer RPC when it is another
// node).
func (n *Node) NodeHealth(ctx context.Context) ([]slotstore.NodeHealth, error) {
	if n.isControllerLeader() {
		return n.obs.nodeHealth(n.cfg.Now(), n.registeredNodes(), n.cfg.NodeID), nil
	}
	return askControllerLeader[[]slotstore.NodeHealth](ctx, n, "health")
}

// nodeOfReplica maps a replica of group g to its node: through the desired
// peers, else through the raft address the membership lists for it.
func nodeOfReplica(st *controller.State, g slotstore.GroupID, replica uint64, addrs map[uint64]string) slotstore.NodeID {
	if grp, ok := st.Groups[g]; ok {
		if node, ok := grp.NodeOfReplica(replica); ok {
			return node
		}
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

// aggregate builds every group's view from the intent and the latest reports.
func (n *Node) aggregate(now time.Time) []slotstore.GroupView {
	st := n.ctrl.Load()
	n.obs.mu.Lock()
	reports := make(map[slotstore.NodeID]report, len(n.obs.reports))
	for id, r := range n.obs.reports {
		reports[id] = r
	}
	n.obs.mu.Unlock()
	table, _ := st.Table()
	views := make([]slotstore.GroupView, 0, len(st.Groups))
	for _, gid := range st.GroupIDs() {
		grp := st.Groups[gid]
		v := slotstore.GroupView{ID: gid, ConfigEpoch: grp.ConfigEpoch, PreferredLeader: grp.PreferredLeader,
			PreferredSetAtMs: grp.PreferredSetAtMs, Aggregator: n.cfg.NodeID, Voters: []slotstore.NodeID{}, Learners: []slotstore.NodeID{}}
		if table != nil {
			v.HashSlots = len(table.SlotsOf(gid))
		}
		for _, node := range grp.PeerNodes() {
			v.DesiredPeers = append(v.DesiredPeers, slotstore.DesiredPeer{Node: node, ReplicaID: grp.Peers[node]})
		}
		type seen struct {
			rs slotstore.ReplicaStatus
			at time.Time
		}
		var reps []seen
		var best *seen // the report naming the leader at the highest term, the leader's own preferred
		for _, r := range reports {
			for _, rs := range r.status.Replicas {
				if rs.Group != gid {
					continue
				}
				reps = append(reps, seen{rs, r.receivedAt})
			}
		}
		for i := range reps {
			s := &reps[i]
			if s.rs.LeaderReplica == 0 {
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
		var heardAgo map[uint64]int64 // from the leader's own report
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
					heardAgo, leaderReportAge = s.rs.HeardAgoMs, now.Sub(s.at).Milliseconds()
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
				LogFirst: s.rs.LogFirst, LogLast: s.rs.LogLast, ReportAgeMs: now.Sub(s.at).Milliseconds()}
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
			rv.HeardAgoMs = -1
			switch ago, ok := heardAgo[s.rs.ReplicaID]; {
			case heardAgo != nil && s.rs.ReplicaID == best.rs.LeaderReplica:
				rv.HeardAgoMs = 0
			case ok && ago >= 0:
				rv.HeardAgoMs = ago + leaderReportAge
			}
			rv.Disruption, rv.DisruptedAgoMs = s.rs.Disruption, s.rs.DisruptedAgoMs
			if rv.Disruption != "" {
				rv.DisruptedAgoMs += rv.ReportAgeMs
			}
			rv.Live = rv.Role == slotstore.RoleVoter && rv.ReportAgeMs <= n.cfg.UnreachableAfter.Milliseconds() &&
				rv.HeardAgoMs >= 0 && rv.HeardAgoMs <= n.cfg.UnreachableAfter.Milliseconds()
			if rv.Live {
				v.LiveVoters++
			}
			reported[s.rs.Node] = true
			v.Replicas = append(v.Replicas, rv)
		}
		for _, p := range v.DesiredPeers { // desired peers that reported nothing
			if !reported[p.Node] {
				v.Replicas = append(v.Replicas, slotstore.ReplicaView{Node: p.Node, ReplicaID: p.ReplicaID, Role: slotstore.RoleUnknown,
					Desired: true, ReportAgeMs: -1, HeardAgoMs: -1})
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

// Groups returns every group's intent and observed fact, as aggregated by
// the controller leader (asked over peer RPC when it is another node).
func (n *Node) Groups(ctx context.Context) ([]slotstore.GroupView, error) {
	if n.isControllerLeader() {
		return n.aggregate(n.cfg.Now()), nil
	}
	return askControllerLeader[[]slotstore.GroupView](ctx, n, "groups")
}

// askControllerLeader GETs one of the views only the controller leader
// holds (groups, health) over peer RPC.
func askControllerLeader[T any](ctx context.Context, n *Node, path string) (T, error) {
	var out T
	leader := slotstore.NodeID(n.ctrlLeader.Load())
	addr := n.peerAddrOf(leader)
	if leader == 0 || addr == "" {
		return out, slotstore.Errorf(slotstore.CodeRouteNotReady, "the controller leader is unknown")
	}
	resp, _, err := n.peers.call(ctx, http.MethodGet, addr, path, nil, nil)
	if err != nil {
		return out, err
	}
	body, err := readBody(resp)
	if err != nil {
		return out, slotstore.Wrap(slotstore.CodeTimeout, err, "reading the controller leader's answer")
	}
	if err := json.Unmarshal(body, &out); err != nil {
		return out, slotstore.Wrap(slotstore.CodeInternal, err, "undecodable answer of the controller leader")
	}
	return out, nil
}

func (n *Node) servePeerGroups(_ context.Context, w http.ResponseWriter, _ *http.Request) {
	serveControllerView(n, w, func() []slotstore.GroupView { return n.aggregate(n.cfg.Now()) })
}

func (n *Node) servePeerHealth(_ context.Context, w http.ResponseWriter, _ *http.Request) {
	serveControllerView(n, w, func() []slotstore.NodeHealth { return n.obs.nodeHealth(n.cfg.Now(), n.registeredNodes(), n.cfg.NodeID) })
}

// serveControllerView answers a view only the controller leader holds.
func serveControllerView[T any](n *Node, w http.ResponseWriter, view func() T) {
	if !n.isControllerLeader() {
		writePeerError(w, http.StatusServiceUnavailable, &slotstore.Error{Code: slotstore.CodeNotLeader,
			LeaderHint: slotstore.NodeID(n.ctrlLeader.Load()), Message: "this node does not lead the controller"})
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(view())
}
