package cluster_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/peer"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestPeerWritesAreAttributedToTheirNode: what a holder of the cluster
// secret proposes through the peer port — as a node would forward it — is
// counted by the node it names, and a step of a channel migration is in the
// audit trail as done by that node through the peer port; a made-up node is
// counted as unknown, and a plain data write leaves the trail alone.
func TestPeerWritesAreAttributedToTheirNode(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 1,
		Tune: func(cfg *cluster.Config) { cfg.Registerer = reg }})
	n := c.Nodes[0]
	addr := peerAddr(t, n, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	send := func(from slotstore.NodeID, cmd meta.Command) error {
		t.Helper()
		cl := peer.NewClient(peer.NewSecret(slotstoretest.Secret), 4)
		defer cl.Close()
		cl.From(from)
		cmd.Head().HashSlot = slotstore.HashSlotOfString(cmd.RouteKey())
		res, _, _, err := cl.Propose(ctx, addr, mustEncode(cmd), 0)
		if err != nil {
			return err
		}
		return res.Err()
	}
	trail := len(n.Operator().AuditTrail())
	if err := send(1, &meta.PutKV{Key: "k", Value: []byte("v")}); err != nil {
		t.Fatalf("data write through the peer port: %v", err)
	}
	if err := send(99, &meta.PutKV{Key: "k", Value: []byte("w")}); err != nil {
		t.Fatalf("data write naming a made-up node: %v", err)
	}
	ref := meta.ChanRef{ChannelType: 1, ChannelID: "room"}
	if err := send(1, &meta.CreateChannelTask{ChanRef: ref, Kind: meta.ChannelLeaderTransfer, SourceNode: 1, TargetNode: 2}); err != nil {
		t.Fatalf("create a channel migration through the peer port: %v", err)
	}
	// A step from a phase the task is not in is refused, and recorded as refused.
	if err := send(2, &meta.AdvanceChannelTask{ChanRef: ref, TaskID: 1, ExpectedPhase: meta.PhaseSwitching, Phase: meta.PhaseDone}); slotstore.ErrorCode(err) != slotstore.CodeConflict {
		t.Fatalf("a step from the wrong phase: %v, want conflict", err)
	}

	got := series(t, reg, "slotmeta_peer_writes_total")
	for labels, want := range map[string]float64{"from=1,kind=data": 1, "from=unknown,kind=data": 1, "from=1,kind=channel_task": 1, "from=unknown,kind=channel_task": 1} {
		if got[labels] != want {
			t.Errorf("slotmeta_peer_writes_total{%s} = %v, want %v (all: %v)", labels, got[labels], want, got)
		}
	}
	// The record is written before the peer's answer (peerProposed).
	recs := n.Operator().AuditTrail()[trail:]
	if len(recs) != 2 {
		t.Fatalf("audit records after the peer writes: %+v, want the two migration steps only", recs)
	}
	for i, want := range []struct {
		who, action string
		outcome     slotstore.AuditOutcome
		code        slotstore.Code
	}{{"node 1", "peer propose create_channel_task", slotstore.AuditOK, ""},
		{"node 2", "peer propose advance_channel_task", slotstore.AuditRefused, slotstore.CodeConflict}} {
		r := recs[i]
		if r.Who != want.who || r.Role != "node" || r.Via != "peer" || r.Node != 1 || r.Action != want.action ||
			r.Target != "/v1/channels/room/migrations" || r.Outcome != want.outcome || r.Code != want.code || r.Source == "" {
			t.Fatalf("audit record %d of the peer writes: %+v, want %+v", i, r, want)
		}
	}
}

// mustEncode encodes a command the test knows is within every codec limit.
func mustEncode(c meta.Command) []byte {
	b, err := meta.EncodeCommand(c)
	if err != nil {
		panic(err)
	}
	return b
}
