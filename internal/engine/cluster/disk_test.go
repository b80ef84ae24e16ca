package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/diskguard"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// smallDisk mounts a tmpfs of size bytes on a new directory (root only)
// and unmounts it when the test ends, after what it holds was closed.
func smallDisk(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a small filesystem needs root")
	}
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		t.Skipf("cannot mount a tmpfs on %s: %v", dir, err)
	}
	// Registered before the cluster's cleanups: runs after them.
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// TestAFullDiskRefusesWritesAndRecovers (issue 48, item 1, on one node):
// the data directory is a 160 MiB filesystem; something else fills it
// until less than the node's 32 MiB reserve is left. The node does not
// crash: a write answers one clear error — 503 no_space, retryable with
// Retry-After, naming the disk — reads go on, /readyz says why, the metric
// says so, and the ballast is given up. Once the space is freed the node
// takes writes again without a restart, its ballast back, and every
// acknowledged write reads back.
func TestAFullDiskRefusesWritesAndRecovers(t *testing.T) {
	disk := smallDisk(t, 160<<20)
	reg := prometheus.NewRegistry()
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 2, Tune: func(cfg *cluster.Config) {
		cfg.DataDir = filepath.Join(disk, "node")
		cfg.DiskReserve = 32 << 20
		cfg.DiskCheckInterval = 20 * time.Millisecond
		cfg.Registerer = reg
	}})
	n := c.Nodes[0]
	api := c.ServeAPIs()[0].URL
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ballast := filepath.Join(c.DataDir(0), diskguard.BallastFile)
	waitUntil(t, 10*time.Second, "the ballast", func() bool { _, err := os.Stat(ballast); return err == nil })
	var acked []string
	write := func(k string) {
		t.Helper()
		put(t, ctx, n, k, []byte("v-"+k))
		acked = append(acked, k)
	}
	for i := range 50 {
		write(fmt.Sprintf("before-%d", i))
	}

	// Something else fills the filesystem, leaving 16 MiB.
	filler := fill(t, disk, 16<<20)
	waitUntil(t, 10*time.Second, "the node to say its disk is low", func() bool {
		return slotstore.ErrorCode(n.Ready()) == slotstore.CodeNoSpace
	})
	if err := n.Ready(); !strings.Contains(err.Error(), "disk low") || !strings.Contains(err.Error(), "under the 32 MiB reserve") {
		t.Fatalf("/readyz's reason: %v", err)
	}
	if _, err := os.Stat(ballast); !os.IsNotExist(err) {
		t.Fatalf("the ballast is kept while the disk is low: %v", err)
	}
	_, _, err := n.Propose(ctx, &meta.PutKV{Key: "while-low", Value: []byte("x")})
	if slotstore.ErrorCode(err) != slotstore.CodeNoSpace || !slotstore.ErrorCode(err).Retryable() || !strings.Contains(err.Error(), "disk is low") {
		t.Fatalf("a write while the disk is low: %v", err)
	}
	// Through the API: one clear error.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPut, api+"/v1/kv/over-http", strings.NewReader(`{"value":"x"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var e struct {
		Error struct {
			Code      string `json:"code"`
			Message   string `json:"message"`
			Retryable bool   `json:"retryable"`
		} `json:"error"`
	}
	if resp.StatusCode != http.StatusServiceUnavailable || json.Unmarshal(body, &e) != nil || e.Error.Code != "no_space" || !e.Error.Retryable ||
		resp.Header.Get("Retry-After") == "" {
		t.Fatalf("PUT while the disk is low: %d %s (Retry-After %q)", resp.StatusCode, body, resp.Header.Get("Retry-After"))
	}
	readBack := func(when string) {
		t.Helper()
		for _, k := range acked {
			v, _, err := n.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Linearizable)
			if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != "v-"+k {
				t.Fatalf("acknowledged %s, read %s: %v %v", k, when, v, err)
			}
		}
	}
	readBack("while the disk is low") // reads go on
	if m := series(t, reg, "slotmeta_disk_low"); m[""] != 1 {
		t.Fatalf("slotmeta_disk_low while low: %v", m)
	}
	if d := n.Operator().Summary().Disk; !d.Low || d.FreeBytes >= d.ReserveBytes || d.TotalBytes < 150<<20 {
		t.Fatalf("GET /v1/cluster's disk while low: %+v", d)
	}

	// Space freed: writes again, without a restart.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "the node to take writes again", func() bool { return n.Ready() == nil })
	for i := range 20 {
		write(fmt.Sprintf("after-%d", i))
	}
	waitUntil(t, 10*time.Second, "the ballast back", func() bool { _, err := os.Stat(ballast); return err == nil })
	if m := series(t, reg, "slotmeta_disk_low"); m[""] != 0 {
		t.Fatalf("slotmeta_disk_low after: %v", m)
	}
	if d := n.Operator().Summary().Disk; d.Low || d.FreeBytes <= d.ReserveBytes {
		t.Fatalf("GET /v1/cluster's disk after: %+v", d)
	}
	readBack("after")
	t.Logf("%d acknowledged writes read back", len(acked))
}

// fill leaves about left bytes free in disk's filesystem (a file of the
// rest, allocated) and returns its path.
func fill(t *testing.T, disk string, left int64) string {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(disk, &st); err != nil {
		t.Fatal(err)
	}
	filler := filepath.Join(disk, "filler")
	f, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(st.Bavail)*st.Bsize-left); err != nil {
		t.Fatal(err)
	}
	return filler
}

// smallDiskCluster starts three nodes, node on a 160 MiB filesystem of its
// own with a 32 MiB reserve (its metrics on reg, when set), and waits for
// node 1 to lead group 1, its preferred leader. It returns the cluster and
// the filesystem's directory.
func smallDiskCluster(t *testing.T, ctx context.Context, node slotstore.NodeID, reg *prometheus.Registry) (*slotstoretest.Cluster, string) {
	t.Helper()
	disk := smallDisk(t, 160<<20)
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.DiskCheckInterval = 20 * time.Millisecond
		if cfg.NodeID == node {
			cfg.DataDir = filepath.Join(disk, "node")
			cfg.DiskReserve = 32 << 20
			if reg != nil {
				cfg.Registerer = reg
			}
		}
	}})
	if err := c.Nodes[0].Operator().SetPreferredLeader(ctx, faultGroup, 1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 30*time.Second, "node 1 to lead group 1", func() bool { return leaderOf(c.Nodes[1]) == 1 })
	return c, disk
}

// TestALeaderLowOnDiskHandsItsGroupsOver (issue 48, item 1): node 1, the
// preferred leader of group 1, runs on a small filesystem that something
// else fills. The controller leader sees its report (disk_low) and moves
// the group's leadership to another voter (a leader_disk_low decision);
// writes through every node go on — node 1 forwards them to the new
// leader — and the preferred-leader reconciler leaves the group there
// while node 1 stays low. Once space is freed, the group goes back to node
// 1. Every acknowledged write reads back.
func TestALeaderLowOnDiskHandsItsGroupsOver(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, disk := smallDiskCluster(t, ctx, 1, nil)
	var acked []string
	write := func(via int, k string) {
		t.Helper()
		put(t, ctx, c.Nodes[via], k, []byte("v-"+k))
		acked = append(acked, k)
	}
	for i := range 30 {
		write(i%3, fmt.Sprintf("before-%d", i))
	}

	filler := fill(t, disk, 16<<20)
	waitUntil(t, 30*time.Second, "group 1's leadership to leave node 1", func() bool {
		l := leaderOf(c.Nodes[1])
		return l != 0 && l != 1
	})
	waitUntil(t, 10*time.Second, "the leader_disk_low transfer in the decision log", func() bool {
		return slices.ContainsFunc(c.Nodes[1].Operator().Decisions(), func(d slotstore.Decision) bool {
			return d.Kind == slotstore.DecisionTransferred && d.Reason == "leader_disk_low"
		})
	})
	for i := range 30 { // through every node, node 1 too (it forwards)
		write(i%3, fmt.Sprintf("while-low-%d", i))
	}
	if l := leaderOf(c.Nodes[1]); l == 1 {
		t.Fatal("the group went back to node 1 while its disk was low")
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 60*time.Second, "group 1 back on node 1, its preferred leader", func() bool { return leaderOf(c.Nodes[1]) == 1 })
	for i := range 10 {
		write(i%3, fmt.Sprintf("after-%d", i))
	}
	for _, k := range acked {
		v, _, err := c.Nodes[2].Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Linearizable)
		if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != "v-"+k {
			t.Fatalf("acknowledged %s reads back %v %v", k, v, err)
		}
	}
}

// TestAFollowerOnAFullDiskStoresNothingUntilFreed (issue 48, item 1): node
// 3 follows group 1 from a small filesystem that something else fills to
// under half its reserve. It does not append until ENOSPC (where the
// engine panics): the appends its leader sends are dropped and counted, so
// its replica falls behind while writes through every node go on, and a
// linearizable read through it is answered by the leader's node. The
// controller places nothing on it. Once space is freed it catches up —
// its own state reads every acknowledged write — without a restart.
func TestAFollowerOnAFullDiskStoresNothingUntilFreed(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	reg := prometheus.NewRegistry()
	c, disk := smallDiskCluster(t, ctx, 3, reg)
	const g = faultGroup
	n3 := c.Nodes[2]
	applied := func(n *cluster.Node) uint64 {
		for _, r := range n.Operator().Summary().Local {
			if r.Group == g {
				return r.AppliedIndex
			}
		}
		return 0
	}
	var acked []string
	write := func(via int, k string) {
		t.Helper()
		put(t, ctx, c.Nodes[via], k, []byte("v-"+k))
		acked = append(acked, k)
	}
	for i := range 20 {
		write(i%3, fmt.Sprintf("before-%d", i))
	}

	filler := fill(t, disk, 4<<20) // with its 8 MiB ballast given up: 12 MiB, under half the 32 MiB reserve
	waitUntil(t, 10*time.Second, "node 3 to say its disk is full", func() bool { return n3.Operator().Summary().Disk.Full })
	if err := n3.Ready(); err == nil || !strings.Contains(err.Error(), "store nothing others send") {
		t.Fatalf("/readyz while full: %v", err)
	}
	if m := series(t, reg, "slotmeta_disk_full"); m[""] != 1 {
		t.Fatalf("slotmeta_disk_full while full: %v", m)
	}
	behind := applied(n3)
	for i := range 40 { // through every node, node 3 too (it forwards)
		write(i%3, fmt.Sprintf("while-full-%d", i))
	}
	lead := applied(c.Nodes[0])
	if now := applied(n3); now > behind+2 || lead < behind+40 {
		t.Fatalf("node 3's replica applied %d → %d while its disk was full; the leader's %d", behind, now, lead)
	}
	if m := series(t, reg, "slotmeta_raft_held_total"); m["kind=message"] == 0 {
		t.Fatalf("no append held: %v", m)
	}
	// A linearizable read through node 3 is answered, by the leader's node.
	k := acked[len(acked)-1]
	v, info, err := n3.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Linearizable)
	if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != "v-"+k || info.ServedBy == 3 {
		t.Fatalf("a linearizable read through node 3 while full: %v %+v %v", v, info, err)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, 10*time.Second, "node 3's disk to be ok", func() bool { return n3.Ready() == nil })
	for i := range 5 {
		write(i%3, fmt.Sprintf("after-%d", i))
	}
	waitUntil(t, 30*time.Second, "node 3 to catch up", func() bool { return applied(n3) >= applied(c.Nodes[0]) })
	for _, k := range acked {
		v, _, err := n3.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Local)
		if kv, _ := v.(*meta.KV); err != nil || kv == nil || string(kv.Value) != "v-"+k {
			t.Fatalf("acknowledged %s: node 3's own state reads %v %v", k, v, err)
		}
	}
	t.Logf("node 3 held back at applied %d while the leader went to %d; %d acknowledged writes read back from its own state", behind, lead, len(acked))
}
