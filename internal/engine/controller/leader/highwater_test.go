package leader

import (
	"context"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/controller/policy"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestRecordHighWater: the leader records each group's highest applied
// index reported by a current replica — not by a replica the group no
// longer names (a tombstoned one's old report) — and proposes nothing when
// no mark rose.
func TestRecordHighWater(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	host := bootstrappedHost(t, clock)
	ctx := context.Background()
	peers := host.Controller().Groups[1].Peers
	applied := map[slotstore.NodeID]uint64{1: 50, 2: 70, 3: 60}
	views := func(time.Time) []slotstore.GroupView {
		v := slotstore.GroupView{ID: 1}
		for n := slotstore.NodeID(1); n <= 3; n++ {
			v.DesiredPeers = append(v.DesiredPeers, slotstore.DesiredPeer{Node: n, ReplicaID: peers[n]})
			v.Replicas = append(v.Replicas, slotstore.ReplicaView{Node: n, ReplicaID: peers[n], AppliedIndex: applied[n], ReportAgeMs: 100})
		}
		// A replica the group no longer names, with an old report.
		v.Replicas = append(v.Replicas, slotstore.ReplicaView{Node: 2, ReplicaID: 99, AppliedIndex: 500, ReportAgeMs: 100})
		return []slotstore.GroupView{v}
	}
	leadership := policy.Leadership{}
	leadership.EnsureDefaults()
	l := New(Config{NodeID: 1, Host: host, Peers: noPeers{}, Now: clock, Life: ctx, ObserveInterval: -1,
		RequestTimeout: time.Second, Leadership: leadership, Views: views})
	l.RecordHighWater(ctx, now)
	want := controller.HighWaterMark{Group: 1, Index: 70, Node: 2, AtMs: now.UnixMilli() - 100}
	if got := host.Controller().HighWater[1]; got != want {
		t.Fatalf("mark %+v, want %+v", got, want)
	}
	before := host.Controller().AppliedIndex
	l.RecordHighWater(ctx, now)
	if after := host.Controller().AppliedIndex; after != before {
		t.Fatalf("an unchanged mark was proposed again (%d → %d)", before, after)
	}
	applied[3] = 90
	l.RecordHighWater(ctx, now)
	if got := host.Controller().HighWater[1]; got.Index != 90 || got.Node != 3 {
		t.Fatalf("mark %+v after node 3 applied 90", got)
	}
}
