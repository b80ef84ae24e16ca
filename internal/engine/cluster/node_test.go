package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

func freeAddr(t testing.TB) string { return testutil.FreeAddr(t) }

func testConfig(t *testing.T, dir, raftAddr string) Config {
	return Config{
		NodeID:         1,
		DataDir:        dir,
		RaftAddr:       raftAddr,
		InitialMembers: []controller.Node{{ID: 1, RaftAddr: raftAddr}},
		GroupCount:     4,
		RTT:            5 * time.Millisecond,
		ElectionRTT:    10,
		HeartbeatRTT:   1,
	}
}

func startNode(t testing.TB, cfg Config) *Node {
	t.Helper()
	n, err := Start(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := n.WaitReady(ctx); err != nil {
		n.Close()
		t.Fatal(err)
	}
	return n
}

func TestOneNodeWriteReadRestart(t *testing.T) {
	dir := t.TempDir()
	cfg := testConfig(t, dir, freeAddr(t))
	n := startNode(t, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, uid := range []string{"alice", "bob", "carol"} {
		res, route, err := n.Propose(ctx, &meta.CreateUser{User: meta.User{UID: uid, Name: uid}})
		if err != nil || !res.OK() {
			t.Fatalf("create %s: %v %+v", uid, err, res)
		}
		if route.HashSlot != slotstore.HashSlotOfString(uid) || route.LeaderNodeID != 1 {
			t.Fatalf("route %+v", route)
		}
	}
	res, _, err := n.Propose(ctx, &meta.CreateUser{User: meta.User{UID: "alice"}})
	if err != nil || res.Code != slotstore.CodeConflict {
		t.Fatalf("second create: %v %+v", err, res)
	}
	long := string(make([]byte, meta.MaxKeyBytes+1))
	if _, _, err := n.Propose(ctx, &meta.PutKV{Key: long, Value: []byte("v")}); slotstore.ErrorCode(err) != slotstore.CodeInvalidArgument {
		t.Fatalf("oversize key: %v, want invalid_argument before proposing", err)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	n = startNode(t, cfg)
	defer n.Close()
	v, info, err := n.Read(ctx, &meta.GetUser{HashSlot: slotstore.HashSlotOfString("bob"), UID: "bob"}, meta.Linearizable)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := v.(*meta.User)
	if u == nil || u.Name != "bob" {
		t.Fatalf("after restart got %+v", v)
	}
	if info.ServedBy != 1 || info.AppliedIndex == 0 {
		t.Fatalf("read info %+v", info)
	}
	if rounds, reads := n.Stats().ReadRounds, n.Stats().Reads; rounds != 1 || reads != 1 {
		t.Fatalf("one linearizable read: %d ReadIndex rounds, %d reads counted; want 1, 1", rounds, reads)
	}
}

func freeAddrB(b *testing.B) string { return freeAddr(b) }

func startNodeB(b *testing.B, cfg Config) *Node {
	if len(cfg.InitialMembers) == 0 {
		cfg.InitialMembers = []controller.Node{{ID: cfg.NodeID, RaftAddr: cfg.RaftAddr}}
	}
	return startNode(b, cfg)
}
