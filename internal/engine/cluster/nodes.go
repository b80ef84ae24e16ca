package cluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/lni/dragonboat/v4"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/leader"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// ErrRemoved is returned by Open when the cluster removed this node: a
// removed node never rejoins with its old identity.
var ErrRemoved = errors.New("cluster: this node was removed from the cluster")

// DrainNode starts draining node id: it takes no new replicas, and the
// balancer moves its replicas and leaders off it (progress in Balancer).
func (o operator) DrainNode(ctx context.Context, id slotstore.NodeID) (slotstore.NodeInfo, error) {
	if err := o.ctl.proposeController(ctx, controller.Command{DrainNode: &controller.DrainNode{ID: id}}); err != nil {
		return slotstore.NodeInfo{}, err
	}
	return o.ctrl.Load().Nodes[id].Info(), nil
}

// RemoveNode removes a drained node: refused while it holds a replica, a
// task moves one of its replicas, or it is one of the last controller
// voters. The controller records it removed first (so that every node
// drops its Raft messages from then on), then it leaves the controller
// group's membership.
func (o operator) RemoveNode(ctx context.Context, id slotstore.NodeID) error {
	if id == o.id {
		// Once removed, its own Raft messages and peer requests are
		// refused: it could not finish taking itself out.
		return slotstore.Errorf(slotstore.CodeFailedPrecondition, "node %d cannot remove itself: ask another node's API", id)
	}
	m, err := o.ctl.membership(ctx)
	if err != nil {
		return err
	}
	// What the controller would refuse, refused before the controller's
	// leadership is moved for nothing.
	if held := o.ctrl.Load().ReplicasOn(id); held > 0 {
		return slotstore.Errorf(slotstore.CodeFailedPrecondition, "node %d still holds %d replicas; drain it first", id, held)
	}
	// Removing a voter never leaves the controller group with fewer than
	// leader.ControllerVoters (it would lose its fault tolerance): an
	// active non-voting member is promoted in its place first.
	if _, voter := m.Nodes[uint64(id)]; voter && len(m.Nodes)-1 < leader.ControllerVoters {
		promoted, err := o.ctl.standIn(ctx, id)
		if err != nil {
			return err
		}
		if !promoted {
			return slotstore.Errorf(slotstore.CodeFailedPrecondition,
				"node %d is one of the controller's %d voters and no active non-voting node can take its place; removing it would leave fewer than %d: join a node first",
				id, len(m.Nodes), leader.ControllerVoters)
		}
		if m, err = o.ctl.membership(ctx); err != nil {
			return err
		}
	}
	if err := o.moveControllerLeadershipOff(ctx, id, m); err != nil {
		return err
	}
	if err := o.ctl.proposeController(ctx, controller.Command{RemoveNode: &controller.RemoveNode{ID: id}}); err != nil {
		return err
	}
	return o.ctl.removeMember(ctx, id)
}

// moveControllerLeadershipOff hands the controller's leadership from node id
// to another voter when id leads it (the controller must not lose its leader
// to the removal), waiting at most four election timeouts within ctx; a
// leadership that did not move is a retryable busy.
func (o operator) moveControllerLeadershipOff(ctx context.Context, id slotstore.NodeID, m *dragonboat.Membership) error {
	if o.ctl.leader() != id {
		return nil
	}
	// To this node if it votes (it is up: it serves this request), else to
	// another active voter.
	target := uint64(0)
	if _, ok := m.Nodes[uint64(o.id)]; ok {
		target = uint64(o.id)
	} else {
		st := o.ctrl.Load()
		for voter := range m.Nodes {
			if node, ok := st.Nodes[slotstore.NodeID(voter)]; ok && slotstore.NodeID(voter) != id && node.State == controller.NodeActive {
				target = voter
				break
			}
		}
	}
	if target != 0 {
		o.ctl.transferLeadership(target)
	}
	deadline := time.Now().Add(4 * o.electionTimeout)
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	for time.Now().Before(deadline) {
		if l := o.ctl.leader(); l != id && l != 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return propose.RaftError(ctx.Err(), 0, false)
		case <-t.C:
		}
	}
	return &slotstore.Error{Code: slotstore.CodeBusy, RetryAfter: time.Second,
		Message: fmt.Sprintf("node %d still leads the controller; its leadership is being moved: ask again", id)}
}

// noteRemoved keeps the Raft addresses of removed nodes for the transport
// to refuse (called with every applied controller state).
func (f follower) noteRemoved(st *controller.State) {
	var removed map[string]bool
	if rec := f.n.recovered; rec != nil {
		removed = map[string]bool{}
		for _, addr := range rec.LostRaftAddrs {
			removed[addr] = true
		}
	}
	for _, node := range st.Nodes {
		if node.State == controller.NodeRemoved {
			if removed == nil {
				removed = map[string]bool{}
			}
			removed[node.RaftAddr] = true
		}
	}
	if old := f.n.removed.Load(); removed == nil && old == nil || old != nil && len(*old) == len(removed) {
		return // nodes are only ever added to the removed set
	}
	f.n.removed.Store(&removed)
}

// isRemoved reports whether the cluster removed node id (its peer
// requests are refused).
func (n *Node) isRemoved(id slotstore.NodeID) bool {
	node, ok := n.ctrl.Load().Nodes[id]
	return ok && node.State == controller.NodeRemoved || n.recovered.Fenced(id)
}

// refusesRaftFrom reports whether Raft messages from addr are dropped
// unread: it belongs to a removed node.
func (n *Node) refusesRaftFrom(addr string) bool {
	m := n.removed.Load()
	return m != nil && (*m)[addr]
}

// removedHint is what a removed node is told to do.
const removedHint = "a removed node never rejoins; remove its data directory and join with a new node id and a new Raft address"

// checkNotRemoved, on a restart, asks the other nodes this node knows of
// (all at once, each for at most a second) whether the cluster removed it,
// for at most wait in all; ErrRemoved (with who said so) if it did — they
// also refuse its peer requests once they know. Without an answer the node
// starts: the others drop its Raft messages and refuse its peer requests
// anyway.
func (r controllerReplica) checkNotRemoved(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		st := r.n.ctrl.Load()
		if self, ok := st.Nodes[r.n.cfg.NodeID]; ok && self.State == controller.NodeRemoved {
			return fmt.Errorf("%w (node %d's own controller replica says so): %s", ErrRemoved, r.n.cfg.NodeID, removedHint)
		}
		var peers []*controller.Node
		for _, id := range st.NodeIDs() {
			if other := st.Nodes[id]; id != r.n.cfg.NodeID && other.PeerAddr != "" && other.State != controller.NodeRemoved {
				peers = append(peers, other)
			}
		}
		if st.Bootstrapped && len(peers) == 0 {
			return nil // nobody to ask (a one-node cluster)
		}
		verdicts := make([]error, len(peers))
		answered := make([]bool, len(peers))
		var wg sync.WaitGroup
		for i, other := range peers {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(r.n.life, time.Second)
				defer cancel()
				nodes, err := r.n.askNodes(ctx, other.PeerAddr)
				switch {
				case slotstore.ErrorCode(err) == slotstore.CodePermissionDenied:
					verdicts[i] = fmt.Errorf("%w (node %d refuses this node's requests: %v): %s", ErrRemoved, other.ID, err, removedHint)
				case err == nil:
					answered[i] = true
					for _, info := range nodes {
						if info.ID == r.n.cfg.NodeID && info.State == controller.NodeRemoved {
							verdicts[i] = fmt.Errorf("%w (node %d says so): %s", ErrRemoved, other.ID, removedHint)
						}
					}
				}
			})
		}
		wg.Wait()
		for _, v := range verdicts { // one peer that knows is enough: another may lag
			if v != nil {
				return v
			}
		}
		if slices.Contains(answered, true) {
			return nil
		}
		select {
		case <-time.After(100 * time.Millisecond):
		case <-r.n.stop:
			return nil
		}
	}
	r.n.cfg.Logger.Warn("no other node answered whether this node was removed; starting", "waited", wait)
	return nil
}

func (n *Node) askNodes(ctx context.Context, addr string) ([]slotstore.NodeInfo, error) {
	resp, _, err := n.peers.Call(ctx, http.MethodGet, addr, "nodes", nil, nil)
	if err != nil {
		return nil, err
	}
	body, err := peer.ReadBody(resp)
	if err != nil {
		return nil, err
	}
	var out []slotstore.NodeInfo
	return out, json.Unmarshal(body, &out)
}

func (p peerAPI) servePeerNodes(_ context.Context, w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(p.n.Operator().Nodes())
}
