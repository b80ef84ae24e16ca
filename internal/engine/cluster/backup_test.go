package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/backup"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestBackupOfACluster: a backup taken under writes on one node of four
// (groups of three replicas, so the node lacks some and fetches their
// images from another node) verifies whole, every write acknowledged
// before it started is in the group images — each read back by a state
// machine recovered from its image, the way a restore will — every hash
// slot is in exactly one image, the controller's state is in it without
// the peer secret, and a second backup is refused while one runs.
func TestBackupOfACluster(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 4, Groups: 4, ReplicationFactor: 3})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var before []string
	for i := range 200 {
		k := fmt.Sprintf("bk-%d", i)
		put(t, ctx, c.Nodes[i%len(c.Nodes)], k, []byte("v-"+k)) // again after a timeout (CI of 873b686)
		before = append(before, k)
	}
	// Writes go on through the backup.
	stopWriting := keepWriting(func(i int) bool {
		k := fmt.Sprintf("during-%d", i)
		res, _, err := c.Nodes[i%len(c.Nodes)].Propose(ctx, &meta.PutKV{Key: k, Value: []byte("v-" + k)})
		return err == nil && res.OK()
	})
	self := c.Nodes[0]
	b, err := self.Operator().Backups().StartBackup(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := self.Operator().Backups().StartBackup(ctx); slotstore.ErrorCode(err) != slotstore.CodeConflict {
		t.Fatalf("a second backup while one runs: %v", err)
	}
	waitUntil(t, 30*time.Second, "the backup to end", func() bool {
		if b, err = self.Operator().Backups().Backup(ctx, b.ID); err != nil {
			t.Fatal(err)
		}
		return b.State != slotstore.BackupRunning
	})
	during := stopWriting()
	if b.State != slotstore.BackupDone || b.Percent != 100 || b.Groups != 4 || b.Bytes == 0 {
		t.Fatalf("backup %+v", b)
	}
	t.Logf("backup %s: %d bytes, %d writes meanwhile", b.ID, b.Bytes, during)
	st := self.Controller()
	m, err := backup.Verify(b.Dir, backup.VerifyOptions{ClusterID: st.ClusterID})
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for g := range st.Groups {
		if _, ok := st.Groups[g].Peers[self.NodeID()]; ok {
			held++
		}
	}
	if len(m.Groups) != 4 || held == 4 {
		t.Fatalf("%d groups in the backup; node 1 holds %d of 4 (the test wants some fetched from elsewhere)", len(m.Groups), held)
	}
	found := map[string]bool{}
	for _, gi := range m.Groups {
		r, err := backup.Open(b.Dir, m, gi.Stream)
		if err != nil {
			t.Fatal(err)
		}
		db, err := store.Open(t.TempDir(), nil)
		if err != nil {
			t.Fatal(err)
		}
		sm := fsm.New(fsm.Config{Group: gi.Group, DB: db})
		if _, err := sm.Open(nil); err != nil {
			t.Fatal(err)
		}
		if err := sm.RecoverFromSnapshot(r, nil); err != nil {
			t.Fatalf("group %d's image: %v", gi.Group, err)
		}
		if sm.AppliedIndex() != gi.AppliedIndex {
			t.Fatalf("group %d recovered at %d, the manifest says %d", gi.Group, sm.AppliedIndex(), gi.AppliedIndex)
		}
		owned := map[slotstore.HashSlot]bool{}
		for _, hs := range gi.Slots {
			owned[hs] = true
		}
		for _, k := range before {
			hs := slotstore.HashSlotOfString(k)
			if !owned[hs] {
				continue
			}
			v, err := sm.Lookup(&meta.GetKV{HashSlot: hs, Key: k})
			if err != nil || v.(*meta.KV) == nil || string(v.(*meta.KV).Value) != "v-"+k {
				t.Fatalf("group %d's image: %s is %+v, %v", gi.Group, k, v, err)
			}
			found[k] = true
		}
		_ = db.Close()
	}
	if len(found) != len(before) {
		t.Fatalf("%d of the %d writes acknowledged before the backup are in it", len(found), len(before))
	}
	r, err := backup.Open(b.Dir, m, "controller")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	var cs controller.State
	if err := json.Unmarshal(raw, &cs); err != nil || cs.ClusterID != st.ClusterID || len(cs.Groups) != 4 || cs.PeerSecret != "" {
		t.Fatalf("the controller's state in the backup: cluster %q, %d groups, secret kept %v, %v", cs.ClusterID, len(cs.Groups), cs.PeerSecret != "", err)
	}
	list, err := self.Operator().Backups().Backups(ctx)
	if err != nil || len(list) != 1 || list[0].ID != b.ID || list[0].State != slotstore.BackupDone {
		t.Fatalf("the node's backups: %+v %v", list, err)
	}
}

// keepWriting calls write(0), write(1), … on a goroutine of its own until
// the function it returns is called, which waits for the last call and
// returns how many calls wrote.
func keepWriting(write func(i int) bool) func() int64 {
	stop := make(chan struct{})
	var wrote atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if write(i) {
				wrote.Add(1)
			}
		}
	})
	return func() int64 {
		close(stop)
		wg.Wait()
		return wrote.Load()
	}
}
