package leader

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/engine/controller/tasks"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// fakeHost is a node leading the controller, whose controller replica is a
// real controller.StateMachine applying every proposal at once; transfers
// on this node are recorded and succeed.
type fakeHost struct {
	self slotstore.NodeID
	now  func() time.Time
	ctrl *controller.StateMachine

	mu        sync.Mutex
	index     uint64
	transfers []slotstore.GroupID
	// transferErr, when set, is what a transfer here answers.
	transferErr error
	// The controller group's membership (voters_test.go).
	voters, learners []slotstore.NodeID
	// lagging are commands committed but not applied here yet, until
	// SyncController (peerapi_test.go).
	lagging []controller.Command
}

func newFakeHost(self slotstore.NodeID, now func() time.Time) *fakeHost {
	return &fakeHost{self: self, now: now, ctrl: controller.NewStateMachine(nil)}
}

// bootstrappedHost is a fake host (node 1) whose controller founded a
// cluster of nodes 1–3 with one group of three replicas.
func bootstrappedHost(t *testing.T, now func() time.Time) *fakeHost {
	t.Helper()
	host := newFakeHost(1, now)
	nodes := []controller.Node{{ID: 1, RaftAddr: "a1"}, {ID: 2, RaftAddr: "a2"}, {ID: 3, RaftAddr: "a3"}}
	if _, err := host.Propose(context.Background(), controller.Command{Bootstrap: &controller.Bootstrap{ClusterID: "c", GroupCount: 1, ReplicationFactor: 3, Nodes: nodes}}); err != nil {
		t.Fatal(err)
	}
	return host
}

func (h *fakeHost) Controller() *controller.State               { return h.ctrl.Snapshot() }
func (h *fakeHost) ControllerLeader() slotstore.NodeID          { return h.self }
func (h *fakeHost) Status(context.Context) slotstore.NodeStatus { return slotstore.NodeStatus{} }
func (h *fakeHost) PeerAddr(slotstore.NodeID) string            { return "" }
func (h *fakeHost) Wake([]slotstore.GroupID, slotstore.NodeID)  {}
func (h *fakeHost) WakeOn(slotstore.GroupID, slotstore.NodeID)  {}

func (h *fakeHost) ControllerMembers(context.Context) (voters, nonVoting []slotstore.NodeID, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.voters), slices.Clone(h.learners), nil
}

// SyncController applies what the fake's replica lags behind (lagging:
// commands the group committed through another node).
func (h *fakeHost) SyncController(ctx context.Context) error {
	h.mu.Lock()
	lagging := h.lagging
	h.lagging = nil
	h.mu.Unlock()
	for _, c := range lagging {
		if _, err := h.Propose(ctx, c); err != nil {
			return err
		}
	}
	return nil
}

func (h *fakeHost) PromoteController(_ context.Context, id slotstore.NodeID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.learners = slices.DeleteFunc(h.learners, func(n slotstore.NodeID) bool { return n == id })
	h.voters = append(h.voters, id)
	return nil
}

func (h *fakeHost) Propose(_ context.Context, c controller.Command) (controller.Result, error) {
	c.TimeMs = h.now().UnixMilli()
	b, err := controller.EncodeCommand(c)
	if err != nil {
		return controller.Result{}, err
	}
	h.mu.Lock()
	h.index++
	e := sm.Entry{Index: h.index, Cmd: b}
	h.mu.Unlock()
	res, err := h.ctrl.Update(e)
	if err != nil || res.Value != 1 {
		return controller.Result{}, errors.Join(err, errors.New(string(res.Data)))
	}
	return controller.Result{OK: true}, nil
}

func (h *fakeHost) TransferHere(_ context.Context, g slotstore.GroupID, target slotstore.NodeID) (slotstore.NodeID, uint64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.transfers = append(h.transfers, g)
	if h.transferErr != nil {
		return 0, 0, h.transferErr
	}
	return target, 5, nil
}

func (h *fakeHost) Membership(context.Context, tasks.MembershipRequest) (tasks.Membership, error) {
	return tasks.Membership{}, errors.New("no memberships here")
}
func (h *fakeHost) GroupLeader(slotstore.GroupID) slotstore.NodeID { return 0 }
func (h *fakeHost) ProposeToGroup(context.Context, slotstore.GroupID, meta.Command) (meta.Result, error) {
	return meta.Result{}, errors.New("no groups here")
}
func (h *fakeHost) Read(context.Context, meta.Query, meta.Consistency) (any, meta.ReadInfo, error) {
	return nil, meta.ReadInfo{}, errors.New("no groups here")
}

// noPeers refuses every call: the leader under test is alone.
type noPeers struct{}

func (noPeers) Call(context.Context, string, string, string, []byte, map[string]string) (*http.Response, bool, error) {
	return nil, false, errors.New("no peers")
}

// TestEveryRefusalReasonReachesTheDecisionLog drives ReconcileOnce with a
// fake clock and views that each break one condition: every refusal is
// recorded with its reason and time and no transfer is attempted for it;
// the one view that passes every check is transferred, and both the
// decision and its outcome are logged. A second round with the same inputs
// logs nothing new but the transfer.
func TestEveryRefusalReasonReachesTheDecisionLog(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	host := newFakeHost(1, clock)
	cases := map[slotstore.GroupID]struct {
		edit   func(*slotstore.GroupView)
		reason slotstore.Reason
	}{
		11: {func(v *slotstore.GroupView) { v.PreferredSetAtMs = now.Add(-48 * time.Hour).UnixMilli() }, policy.ReasonStaleIntent},
		12: {func(v *slotstore.GroupView) { v.Voters = []slotstore.NodeID{1, 2, 4} }, policy.ReasonVoterMismatch},
		13: {func(v *slotstore.GroupView) { v.Learners = []slotstore.NodeID{4} }, policy.ReasonConfigChangePending},
		14: {func(v *slotstore.GroupView) { v.Replicas[1].ReportAgeMs = 60_000 }, policy.ReasonTargetInactive},
		15: {func(v *slotstore.GroupView) { v.Replicas[1].Lag = 10_000 }, policy.ReasonTargetLagging},
		16: {func(*slotstore.GroupView) {}, policy.ReasonTransferInFlight},
		17: {func(v *slotstore.GroupView) { v.Leader = 0 }, policy.ReasonNoLeader},
	}
	views := func(time.Time) []slotstore.GroupView {
		var out []slotstore.GroupView
		for g, tc := range cases {
			v := transferableView(now)
			v.ID = g
			tc.edit(&v)
			out = append(out, v)
		}
		return out
	}
	leadership := policy.Leadership{}
	leadership.EnsureDefaults()
	l := New(Config{NodeID: 1, Host: host, Peers: noPeers{}, Now: clock, Life: context.Background(), ObserveInterval: -1,
		RequestTimeout: time.Second, UnreachableAfter: 3 * time.Second, Leadership: leadership, Views: views})
	l.transfers.Store(slotstore.GroupID(16), now)

	decisions := l.ReconcileOnce(now)
	if len(decisions) != len(cases) {
		t.Fatalf("%d decisions for %d groups: %+v", len(decisions), len(cases), decisions)
	}
	logged := map[slotstore.GroupID]controller.Decision{}
	for _, d := range host.Controller().Decisions {
		logged[d.Group] = d
	}
	for g, tc := range cases {
		d, ok := logged[g]
		if !ok || d.Kind != slotstore.DecisionSkip || d.Reason != tc.reason {
			t.Errorf("group %d: logged %+v, want skip/%s", g, d, tc.reason)
		}
		if d.AtMs != now.UnixMilli() || d.PreferredLeader != 2 {
			t.Errorf("group %d: the decision lacks its time or inputs: %+v", g, d)
		}
	}
	if len(host.transfers) != 0 {
		t.Fatalf("refused groups were transferred: %v", host.transfers)
	}
	before := len(host.Controller().Decisions)
	l.ReconcileOnce(now)
	if after := len(host.Controller().Decisions); after != before {
		t.Fatalf("an unchanged skip was logged again: %d → %d", before, after)
	}
}

// TestAPassingViewIsTransferredAndItsOutcomeLogged: a group whose every
// check passes is transferred on this node (its leader), and the decision
// log holds the transfer and its outcome with the new leader and term.
func TestAPassingViewIsTransferredAndItsOutcomeLogged(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	host := newFakeHost(1, clock)
	leadership := policy.Leadership{}
	leadership.EnsureDefaults()
	l := New(Config{NodeID: 1, Host: host, Peers: noPeers{}, Now: clock, Life: context.Background(), ObserveInterval: -1,
		RequestTimeout: time.Second, UnreachableAfter: 3 * time.Second, Leadership: leadership,
		Views: func(time.Time) []slotstore.GroupView { return []slotstore.GroupView{transferableView(now)} }})
	decisions := l.ReconcileOnce(now)
	if len(decisions) != 2 || decisions[0].Kind != slotstore.DecisionTransfer || decisions[1].Kind != slotstore.DecisionTransferred {
		t.Fatalf("decisions %+v, want transfer then transferred", decisions)
	}
	if len(host.transfers) != 1 || host.transfers[0] != 1 {
		t.Fatalf("transfers carried out: %v, want group 1 once", host.transfers)
	}
	logged := host.Controller().Decisions
	if len(logged) != 2 || logged[1].Leader != 2 || logged[1].Term != 5 {
		t.Fatalf("logged %+v, want the transfer and its outcome (node 2, term 5)", logged)
	}
}

// transferableView: group 1 on nodes 1–3, node 1 leads, node 2 is preferred,
// caught up and heard by the leader, everyone reported a moment ago — every
// transfer check passes.
func transferableView(now time.Time) slotstore.GroupView {
	return slotstore.GroupView{
		ID: 1, PreferredLeader: 2, PreferredSetAtMs: now.Add(-time.Minute).UnixMilli(),
		DesiredPeers: []slotstore.DesiredPeer{{Node: 1, ReplicaID: 1}, {Node: 2, ReplicaID: 2}, {Node: 3, ReplicaID: 3}},
		Leader:       1, Term: 4, ObservedBy: 1, ObservationAgeMs: 100, Voters: []slotstore.NodeID{1, 2, 3}, Learners: []slotstore.NodeID{},
		Replicas: []slotstore.ReplicaView{
			{Node: 1, ReplicaID: 1, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100, Live: true},
			{Node: 2, ReplicaID: 2, Role: slotstore.RoleVoter, AppliedIndex: 99, Lag: 1, ReportAgeMs: 100, HeardAgoMs: 140, Live: true},
			{Node: 3, ReplicaID: 3, Role: slotstore.RoleVoter, AppliedIndex: 100, ReportAgeMs: 100, HeardAgoMs: 130, Live: true},
		},
	}
}
