package cluster_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/restore"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestRestoreDrill is the drill of issue 29: write every kind of record,
// back up under writes, write more, restore into a fresh cluster of
// another size on other ports. The restored cluster holds exactly the
// backed-up rows — every key, user, device, channel, list, membership,
// runtime record and idempotency record, byte for byte on every replica —
// and nothing written after the backup; it has a new cluster id; it takes
// writes at revisions past the old ones, answers a replayed request from
// its record, survives a restart, and a replica added to a restored group
// gets the group's rows (a snapshot, not the log from its first entry).
func TestRestoreDrill(t *testing.T) {
	// The source projects subscriber changes into memberships only when
	// the test says (below, before the backup), so that the backup holds
	// none pending: a restored cluster would finish them, and its rows
	// would no longer be the image's.
	src := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 4, ReplicationFactor: 3,
		Tune: func(cfg *cluster.Config) { cfg.ProjectInterval = -1 }})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	propose := func(n *cluster.Node, c meta.Command) meta.Result {
		t.Helper()
		res, _, err := n.Propose(ctx, c)
		if err != nil || !res.OK() {
			t.Fatalf("%T: %v %+v", c, err, res)
		}
		return res
	}
	var keys []string
	replays := map[string]meta.Result{}
	for i := range 40 {
		n := src.Nodes[i%3]
		k := fmt.Sprintf("key-%d", i)
		put := &meta.PutKV{Header: meta.Header{IdempotencyKey: "req-" + k}, Key: k, Value: []byte("v-" + k)}
		replays[k] = propose(n, put)
		keys = append(keys, k)
		uid, ch := fmt.Sprintf("u%d", i), fmt.Sprintf("ch%d", i)
		propose(n, &meta.CreateUser{User: meta.User{UID: uid, Name: "user " + uid}})
		propose(n, &meta.PutDevice{UID: uid, Flag: 1, Token: "tok-" + uid, Level: 1})
		propose(n, &meta.CreateChannel{Channel: meta.ChannelInfo{Type: 2, ID: ch, Extra: `{"i":1}`}})
		propose(n, &meta.AddChannelMembers{ChannelMembers: meta.ChannelMembers{List: meta.ListSubscribers, ChannelType: 2, ChannelID: ch, UIDs: []string{uid, "u0"}}})
		propose(n, &meta.PutMembership{UserChannel: meta.UserChannel{UID: uid, ChannelType: 2, ChannelID: ch}, JoinSeq: uint64(i + 1)})
		propose(n, &meta.PutRuntime{Runtime: meta.ChannelRuntime{ChannelType: 2, ChannelID: ch, ChannelEpoch: 1, LeaderEpoch: 1, Leader: 1,
			Replicas: []uint64{1, 2, 3}, ISR: []uint64{1, 2, 3}, MinISR: 2, Status: meta.RuntimeActive}})
	}
	waitUntil(t, 30*time.Second, "the subscriber changes projected", func() bool {
		acked := 0
		for _, n := range src.Nodes {
			k, err := n.Testing().ProjectOnce(ctx)
			if err != nil {
				return false
			}
			acked += k
		}
		return acked == 0
	})
	// The backup, under writes.
	stopWriting := keepWriting(func(i int) bool {
		res, _, err := src.Nodes[i%3].Propose(ctx, &meta.PutKV{Key: fmt.Sprintf("during-%d", i), Value: []byte("d")})
		return err == nil && res.OK()
	})
	b, err := src.Nodes[1].Operator().Backups().StartBackup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, time.Minute, "the backup to end", func() bool {
		b, err = src.Nodes[1].Operator().Backups().Backup(ctx, b.ID)
		return err == nil && b.State != slotstore.BackupRunning
	})
	during := stopWriting()
	if b.State != slotstore.BackupDone {
		t.Fatalf("backup %+v", b)
	}
	for i := range 10 {
		propose(src.Nodes[i%3], &meta.PutKV{Key: fmt.Sprintf("after-%d", i), Value: []byte("late")})
	}
	m, err := backup.Verify(b.Dir, backup.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[slotstore.GroupID]map[string]string{}
	for _, gi := range m.Groups {
		want[gi.Group] = imageRows(t, b.Dir, m, gi)
	}
	oldCluster := src.Nodes[0].Controller().ClusterID
	t.Logf("backup %s: %d bytes, %d writes during it", b.ID, b.Bytes, during)

	// Restore into four nodes (groups of three: each node lacks one).
	laid := map[slotstore.NodeID]*restore.Seed{}
	var mu sync.Mutex
	dst := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond // steps the replica move below
		seed, err := restore.Layout(ctx, restore.Options{From: b.Dir, DataDir: cfg.DataDir, NodeID: cfg.NodeID,
			Members: cfg.InitialMembers, ReplicationFactor: 3})
		if err != nil {
			t.Fatalf("restore node %d: %v", cfg.NodeID, err)
		}
		mu.Lock()
		laid[cfg.NodeID] = seed
		mu.Unlock()
	}})
	st := dst.Nodes[0].Controller()
	if st.ClusterID == oldCluster || st.ClusterID != laid[1].ClusterID || st.Restored == nil || st.Restored.BackupID != b.ID {
		t.Fatalf("restored cluster %q (old %q), restored %+v", st.ClusterID, oldCluster, st.Restored)
	}
	if len(st.Groups) != len(m.Groups) || st.RouteRevision != m.RouteRevision+restore.DefaultBump {
		t.Fatalf("groups %v, route revision %d", st.GroupIDs(), st.RouteRevision)
	}
	for _, gi := range m.Groups {
		for _, s := range gi.Slots {
			if st.HashToGroup[s] != gi.Group {
				t.Fatalf("hash slot %d in group %d, its image is group %d's", s, st.HashToGroup[s], gi.Group)
			}
		}
	}
	via := dst.Nodes[2]
	for _, k := range keys {
		v, _, err := via.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Linearizable)
		if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != "v-"+k {
			t.Fatalf("%s restored as %+v (%v)", k, v, err)
		}
	}
	for i := range 10 {
		k := fmt.Sprintf("after-%d", i)
		if v, _, err := via.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Linearizable); err != nil || v != nil && v.(*meta.KV) != nil {
			t.Fatalf("%s, written after the backup, is in the restored cluster: %+v (%v)", k, v, err)
		}
	}
	// A request replayed answers from its record, at its old revision.
	again := propose(via, &meta.PutKV{Header: meta.Header{IdempotencyKey: "req-key-3"}, Key: "key-3", Value: []byte("v-key-3")})
	if !again.Replayed || again.Revision != replays["key-3"].Revision {
		t.Fatalf("the replay: %+v, first answer %+v", again, replays["key-3"])
	}
	var newKeys []string
	for i := range 8 {
		k := fmt.Sprintf("new-%d", i)
		res := propose(dst.Nodes[i%4], &meta.PutKV{Key: k, Value: []byte("n")})
		if res.Revision <= restore.DefaultBump {
			t.Fatalf("a new write at revision %d, not past the old ones", res.Revision)
		}
		newKeys = append(newKeys, k)
	}

	// A replica added to a restored group has its rows.
	g := st.GroupIDs()[0]
	var to, from slotstore.NodeID
	for _, n := range []slotstore.NodeID{1, 2, 3, 4} {
		if _, ok := st.Groups[g].Peers[n]; !ok {
			to = n
		} else {
			from = n
		}
	}
	moveReplica(ctx, t, via, g, from, to)
	// Its node counted the snapshot's bytes for it (what a move's catch-up
	// reads as progress while the learner's log stands still).
	if i := slices.IndexFunc(dst.Nodes[to-1].LocalStatus(ctx).Replicas, func(rs slotstore.ReplicaStatus) bool {
		return rs.Group == g && rs.SnapshotBytes > 0
	}); i < 0 {
		t.Fatalf("n%d reports no snapshot bytes received for its new replica of group %d: %+v", to, g, dst.Nodes[to-1].LocalStatus(ctx).Replicas)
	}
	key := keys[slices.IndexFunc(keys, func(k string) bool { return st.HashToGroup[slotstore.HashSlotOfString(k)] == g })]
	waitUntil(t, 20*time.Second, fmt.Sprintf("n%d's new replica of group %d to serve %s", to, g, key), func() bool {
		v, info, err := dst.Nodes[to-1].Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key}, meta.Linearizable)
		kv, _ := v.(*meta.KV)
		return err == nil && info.ServedBy == to && kv != nil && string(kv.Value) == "v-"+key
	})
	// Every node of the restored cluster restarts on its data (issue 51):
	// the one that received a replica by a snapshot and the one it left
	// too, over the restored logs and after every replica compacted them.
	for _, compacted := range []bool{false, true} {
		if compacted {
			st := dst.Nodes[0].Controller()
			for _, id := range st.GroupIDs() {
				for n := range st.Groups[id].Peers {
					if _, err := dst.Nodes[n-1].Testing().CompactGroup(ctx, id); err != nil {
						t.Fatalf("n%d: compact group %d: %v", n, id, err)
					}
				}
			}
		}
		for i := range dst.Nodes {
			dst.Restart(i)
		}
	}
	waitUntil(t, 20*time.Second, fmt.Sprintf("n%d's replica of group %d to serve %s after the restarts", to, g, key), func() bool {
		v, info, err := dst.Nodes[to-1].Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key}, meta.Local)
		kv, _ := v.(*meta.KV)
		return err == nil && info.ServedBy == to && kv != nil && string(kv.Value) == "v-"+key
	})

	checkAll(t, ctx, dst.Nodes[0], "after the restore and restarts")
	// Every replica holds exactly the backed-up rows (and the new keys).
	final := dst.Nodes[0].Controller()
	for i := range dst.Nodes {
		dst.StopNode(i)
	}
	skip := map[string]bool{}
	for _, k := range newKeys {
		s := slotstore.HashSlotOfString(k)
		skip[string(meta.KVKey(final.HashToGroup[s], s, k))] = true
	}
	for _, id := range final.GroupIDs() {
		for n := range final.Groups[id].Peers {
			got := restoredRows(storeRows(t, dst.DataDir(int(n)-1), meta.GroupPrefix(id)))
			for k := range skip {
				delete(got, k)
			}
			if diff := rowsDiff(want[id], got); diff != "" {
				t.Fatalf("group %d on n%d differs from its image: %s", id, n, diff)
			}
		}
	}
}

// imageRows recovers a group's image from the backup and returns its rows.
func imageRows(t *testing.T, dir string, m *backup.Manifest, gi backup.GroupImage) map[string]string {
	t.Helper()
	r, err := backup.Open(dir, m, gi.Stream)
	if err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	sm := fsm.New(fsm.Config{Group: gi.Group, DB: db})
	if _, err := sm.Open(nil); err != nil {
		t.Fatal(err)
	}
	if err := sm.RecoverFromSnapshot(r, nil); err != nil {
		t.Fatal(err)
	}
	return restoredRows(liveRows(t, db, meta.GroupPrefix(gi.Group)))
}

// restoredRows are the rows a restore keeps as they were: all but the
// system records it rebases (applied index, revision, the restore mark,
// fences, the migration change log) and the watch logs and heads it moves.
func restoredRows(rows [][2][]byte) map[string]string {
	out := map[string]string{}
	for _, r := range rows {
		k := r[0]
		slot, table := binary.BigEndian.Uint16(k[4:6]), meta.Table(binary.BigEndian.Uint16(k[6:8]))
		if slot == binary.BigEndian.Uint16(meta.SysKey(0, 0)[4:6]) {
			switch meta.SysKind(table) {
			case meta.SysApplied, meta.SysRevision, meta.SysRestored, meta.SysFenced, meta.SysTracked, meta.SysChangeLog:
				continue
			}
		} else if table == meta.TableWatch || table == meta.TableWatchHead {
			continue
		}
		out[string(k)] = string(r[1])
	}
	return out
}

func rowsDiff(want, got map[string]string) string {
	for k, v := range want {
		if g, ok := got[k]; !ok {
			return fmt.Sprintf("row %x missing", k)
		} else if g != v {
			return fmt.Sprintf("row %x is %x, the image's %x", k, g, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			return fmt.Sprintf("row %x not in the image", k)
		}
	}
	if len(want) == 0 {
		return "no rows"
	}
	return ""
}
