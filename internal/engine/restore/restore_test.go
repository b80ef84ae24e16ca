package restore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	sm "github.com/lni/dragonboat/v4/statemachine"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/restore"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// makeBackup writes a backup of three groups (ids 1, 4 and 6, as splits
// and merges leave them), each holding a few keys, and returns its
// directory and the keys by group.
func makeBackup(t *testing.T) (string, map[slotstore.GroupID][]string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "b1")
	w, err := backup.Create(dir, 1024)
	if err != nil {
		t.Fatal(err)
	}
	groups := []slotstore.GroupID{1, 4, 6}
	owned := map[slotstore.GroupID][]slotstore.HashSlot{}
	for s := range slotstore.HashSlotCount {
		g := groups[s%3]
		owned[g] = append(owned[g], slotstore.HashSlot(s))
	}
	keys := map[slotstore.GroupID][]string{}
	m := backup.Manifest{ClusterID: "old", BackupID: "b1", RouteRevision: 9}
	for _, g := range groups {
		db, err := store.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		s := fsm.New(fsm.Config{Group: g, DB: db, Genesis: owned[g]})
		if _, err := s.Open(nil); err != nil {
			t.Fatal(err)
		}
		var entries []sm.Entry
		for i := 0; len(keys[g]) < 20; i++ {
			k := fmt.Sprintf("k%d-%d", g, i)
			hs := slotstore.HashSlotOfString(k)
			if groups[int(hs)%3] != g {
				continue
			}
			keys[g] = append(keys[g], k)
			c, err := meta.EncodeCommand(&meta.PutKV{Header: meta.Header{HashSlot: hs, IdempotencyKey: "r-" + k, TimeMs: 1}, Key: k, Value: []byte("v-" + k)})
			if err != nil {
				t.Fatal(err)
			}
			entries = append(entries, sm.Entry{Index: uint64(len(entries) + 1), Cmd: meta.EncodeEntry([][]byte{c})})
		}
		if _, err := s.Update(entries); err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("group-%d", g)
		sw, err := w.Stream(name)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.WriteImage(sw, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		m.Groups = append(m.Groups, backup.GroupImage{Group: g, Stream: name, AppliedIndex: info.AppliedIndex, Slots: info.Owned, Positions: info.Positions})
		_ = db.Close()
	}
	st := controller.NewState()
	st.ClusterID, st.Bootstrapped, st.InitialGroupCount, st.NextGroupID = "old", true, 3, 7
	st.Audit, st.AuditSeq = []controller.AuditRecord{{Seq: 5, Action: "group.merge"}}, 5
	sw, err := w.Stream("controller")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.NewEncoder(sw).Encode(st); err != nil {
		t.Fatal(err)
	}
	if err := sw.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Finish(m); err != nil {
		t.Fatal(err)
	}
	return dir, keys
}

func members(n int) []controller.Node {
	out := make([]controller.Node, n)
	for i := range out {
		out[i] = controller.Node{ID: slotstore.NodeID(i + 1), RaftAddr: fmt.Sprintf("127.0.0.1:%d", 7000+i)}
	}
	return out
}

// TestLayout: each of four nodes lays out the groups the founding places
// on it (three of the three groups of rf 3 on 4 nodes: each node lacks
// one), rebased: the keys read back, revisions past the old ones, the
// applied index where the log will begin; the seeds agree on the
// cluster, its deployment id and the founding; each names its own log
// starts, with the group's members.
func TestLayout(t *testing.T) {
	from, keys := makeBackup(t)
	ms := members(4)
	var first *restore.Seed
	held := map[slotstore.GroupID]int{}
	for _, n := range ms {
		dir := filepath.Join(t.TempDir(), "data")
		seed, err := restore.Layout(context.Background(), restore.Options{From: from, DataDir: dir, NodeID: n.ID, Members: ms})
		if err != nil {
			t.Fatal(err)
		}
		read, ok, err := restore.ReadSeed(dir)
		if err != nil || !ok || read.ClusterID != seed.ClusterID || len(read.Starts) != len(seed.Starts) {
			t.Fatalf("the seed read back: %+v %v %v", read, ok, err)
		}
		if first == nil {
			first = seed
		}
		if seed.ClusterID != "old-restored-b1" || seed.DeploymentID != restore.DeploymentID(seed.ClusterID) || seed.DeploymentID == 1 ||
			seed.Controller.RouteRevision != 9+restore.DefaultBump || seed.Controller.NextGroupID != 7 || len(seed.Controller.Audit) != 1 {
			t.Fatalf("seed %+v", seed)
		}
		if fmt.Sprint(seed.Controller) != fmt.Sprint(first.Controller) {
			t.Fatal("the nodes' seeds disagree on the founding")
		}
		if err := seed.CheckMembers(ms); err != nil {
			t.Fatal(err)
		}
		if err := seed.CheckMembers(ms[:3]); err == nil {
			t.Fatal("a node started with other members is not refused")
		}
		place := controller.Placement(seed.Controller.Groups, []slotstore.NodeID{1, 2, 3, 4}, 3)
		db, err := store.Open(filepath.Join(dir, "store"), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range place {
			has, err := db.HasGroup(p.Group)
			if err != nil {
				t.Fatal(err)
			}
			mine := false
			for _, id := range p.Nodes {
				mine = mine || id == n.ID
			}
			if has != mine {
				t.Fatalf("n%d holds group %d: %v; placed there: %v", n.ID, p.Group, has, mine)
			}
			if !mine {
				continue
			}
			held[p.Group]++
			s := fsm.New(fsm.Config{Group: p.Group, DB: db})
			if at, err := s.Open(nil); err != nil || at != restore.StartIndex {
				t.Fatalf("group %d opens at %d (%v)", p.Group, at, err)
			}
			hs := slotstore.HashSlotOfString(keys[p.Group][0])
			if h, err := s.ChangeHead(hs); err != nil || h <= restore.DefaultBump {
				t.Fatalf("group %d: slot %d's change-log head %d (%v), not past the old ones", p.Group, hs, h, err)
			}
			for _, k := range keys[p.Group] {
				v, err := s.Lookup(&meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k})
				if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != "v-"+k {
					t.Fatalf("group %d: %s is %+v (%v)", p.Group, k, v, err)
				}
			}
			if rep, ok, _ := fsm.RestoredFor(db, p.Group); !ok || rep != uint64(n.ID) {
				t.Fatalf("group %d laid out for replica %d", p.Group, rep)
			}
		}
		for _, s := range seed.Starts {
			if s.Replica != uint64(n.ID) || s.Index != restore.StartIndex || len(s.Members) != 3 || s.Members[uint64(n.ID)] != n.RaftAddr {
				t.Fatalf("start %+v", s)
			}
		}
		_ = db.Close()
	}
	for g, k := range held {
		if k != 3 {
			t.Fatalf("group %d laid out on %d nodes", g, k)
		}
	}
}

// TestLayoutRefusals: a backup that does not verify, a data directory in
// use, a node that is not a member — refused, nothing written.
func TestLayoutRefusals(t *testing.T) {
	from, _ := makeBackup(t)
	damaged := func(t *testing.T) string {
		dir := filepath.Join(t.TempDir(), "copy")
		if err := os.CopyFS(dir, os.DirFS(from)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for name, c := range map[string]struct {
		spoil func(t *testing.T, o *restore.Options)
		want  string
	}{
		"partial backup": {func(t *testing.T, o *restore.Options) {
			o.From = damaged(t)
			_ = os.Remove(filepath.Join(o.From, backup.ManifestName))
		}, "manifest"},
		"damaged chunk": {func(t *testing.T, o *restore.Options) {
			o.From = damaged(t)
			p := filepath.Join(o.From, "group-4.0000")
			b, _ := os.ReadFile(p)
			b[10] ^= 1
			_ = os.WriteFile(p, b, 0o600)
		}, "group-4.0000"},
		"truncated chunk": {func(t *testing.T, o *restore.Options) {
			o.From = damaged(t)
			_ = os.Truncate(filepath.Join(o.From, "controller.0000"), 3)
		}, "controller.0000"},
		"data directory in use": {func(t *testing.T, o *restore.Options) {
			_ = os.MkdirAll(o.DataDir, 0o700)
			_ = os.WriteFile(filepath.Join(o.DataDir, "x"), []byte("x"), 0o600)
		}, "not empty"},
		"not a member": {func(t *testing.T, o *restore.Options) { o.NodeID = 9 }, "not among"},
	} {
		t.Run(name, func(t *testing.T) {
			o := restore.Options{From: from, DataDir: filepath.Join(t.TempDir(), "data"), NodeID: 1, Members: members(3)}
			c.spoil(t, &o)
			before, _ := os.ReadDir(o.DataDir)
			_, err := restore.Layout(context.Background(), o)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Layout: %v, want a refusal naming %q", err, c.want)
			}
			after, _ := os.ReadDir(o.DataDir)
			if len(after) != len(before) {
				t.Fatalf("the data directory went from %d to %d entries", len(before), len(after))
			}
			if _, ok, _ := restore.ReadSeed(o.DataDir); ok {
				t.Fatal("a seed was written")
			}
		})
	}
	// Cut short after it began writing: what it wrote goes.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cut := filepath.Join(t.TempDir(), "cut")
	if _, err := restore.Layout(ctx, restore.Options{From: from, DataDir: cut, NodeID: 1, Members: members(3)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled layout: %v", err)
	}
	if _, err := os.Stat(cut); !os.IsNotExist(err) {
		t.Fatalf("a cancelled layout left its data directory: %v", err)
	}
	if _, err := restore.Layout(context.Background(), restore.Options{From: from, DataDir: filepath.Join(t.TempDir(), "d"), NodeID: 1,
		Members: members(3)}); err != nil {
		t.Fatalf("the backup itself: %v", err)
	}
}
