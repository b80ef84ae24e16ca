package e2e

import (
	"fmt"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// groupCluster: 3 nodes that start with one group, hash-slot migration on,
// tasks stepped every 100 ms.
func groupCluster(t *testing.T) (*slotstoretest.Cluster, []*server) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.TaskPhaseTimeout = time.Minute
	}})
	servers := make([]*server, len(c.Nodes))
	for i, n := range c.Nodes {
		servers[i] = serve(t, n)
	}
	return c, servers
}

// waitGroupRuns waits until group g has a leader and every one of its
// desired peers reports a replica and is heard by it.
func waitGroupRuns(t *testing.T, s *server, g int, within time.Duration) client.GroupView {
	t.Helper()
	var v client.GroupView
	testutil.WaitFor(t, within, 50*time.Millisecond, func() (bool, string) {
		r := s.do("GET", fmt.Sprintf("/v1/cluster/groups/%d", g), "")
		if r.code == 200 {
			r.json(&v)
			if v.Leader != 0 && len(deref(v.DesiredPeers)) > 0 && v.LiveVoters == len(deref(v.DesiredPeers)) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("group %d does not run on all its peers: %d %s", g, r.code, r.body)
	})
	return v
}

// migrateSlot moves hash slot hs to group to and waits for the task.
func migrateSlot(t *testing.T, s *server, hs slotstore.HashSlot, to int) {
	t.Helper()
	var task client.Task
	s.must(202, "POST", fmt.Sprintf("/v1/cluster/hash-slots/%d/migrations", hs), fmt.Sprintf(`{"to_group":%d}`, to)).json(&task)
	task = waitTask(t, s, task.Id, func(x client.Task) bool { return x.Status != client.TaskStatusRunning }, 30*time.Second)
	if task.Status != client.TaskStatusSucceeded {
		t.Fatalf("migration of hash slot %d to group %d: %s", hs, to, js(task))
	}
}

// TestGroupCreateSplitAndRetire: a group created at runtime runs on three
// nodes, takes a hash slot from the founding group (a split of one slot) and
// serves its rows; it cannot be retired while it owns the slot; once the slot
// went back it retires, every node drops its replica and data, and its id is
// never used again.
func TestGroupCreateSplitAndRetire(t *testing.T) {
	c, servers := groupCluster(t)
	s := servers[0]
	for _, bad := range []string{`{"peers":[1,1,2]}`, `{"peers":[1,2,9]}`, `{"peers":[1,2]}`, `{"peers":[0]}`, `{"group":2}`} {
		if r := s.do("POST", "/v1/cluster/groups", bad); r.code != 400 {
			t.Fatalf("create %s: %d %s", bad, r.code, r.body)
		}
	}
	var task client.Task
	tr := s.must(202, "POST", "/v1/cluster/groups", `{}`)
	tr.json(&task)
	if task.Kind != client.TaskKindGroupCreate || task.Group != 2 || task.Phase != client.TaskPhaseStart || task.Status != client.TaskStatusRunning {
		t.Fatalf("new task: %s", tr.body)
	}
	task = waitTask(t, s, task.Id, func(x client.Task) bool { return x.Status != client.TaskStatusRunning }, 30*time.Second)
	if task.Status != client.TaskStatusSucceeded || task.Phase != client.TaskPhaseDone {
		t.Fatalf("task ended %s", js(task))
	}
	if h := deref(task.History); len(h) == 0 || len(h[len(h)-1].Voters) != 3 {
		t.Fatalf("the start phase recorded no membership of 3: %s", js(task))
	}
	v := waitGroupRuns(t, s, 2, 10*time.Second)
	if v.HashSlots != 0 || v.ConfigEpoch != 1 {
		t.Fatalf("new group: %s", js(v))
	}

	// Split one slot off group 1 into the new group; its rows follow.
	const hs = slotstore.HashSlot(5)
	keys := keysInSlot("split", hs, 20)
	for i, k := range keys {
		s.eventually(200, "PUT", "/v1/kv/"+k, fmt.Sprintf(`{"value":"v%d"}`, i))
	}
	migrateSlot(t, s, hs, 2)
	for _, srv := range servers {
		for i, k := range keys {
			var kv client.KV
			srv.eventually(200, "GET", "/v1/kv/"+k, "").json(&kv)
			if kv.Value != fmt.Sprintf("v%d", i) {
				t.Fatalf("%s after the split: %s", k, js(kv))
			}
		}
	}
	s.eventually(200, "PUT", "/v1/kv/"+keys[0], `{"value":"in group 2"}`)
	if r := s.do("DELETE", "/v1/cluster/groups/2", ""); r.code != 409 {
		t.Fatalf("retiring a group that owns a slot: %d %s", r.code, r.body)
	}
	if r := s.do("DELETE", "/v1/cluster/groups/1", ""); r.code != 409 {
		t.Fatalf("retiring the founding group: %d %s", r.code, r.body)
	}

	// Merge it back and retire it.
	migrateSlot(t, s, hs, 1)
	s.must(204, "DELETE", "/v1/cluster/groups/2", "")
	s.must(204, "DELETE", "/v1/cluster/groups/2", "") // retiring a retired group succeeds again
	s.eventually(404, "GET", "/v1/cluster/groups/2", "")
	waitNoKeys(t, c, 2)
	var kv client.KV
	s.must(200, "GET", "/v1/kv/"+keys[0], "").json(&kv)
	if kv.Value != "in group 2" {
		t.Fatalf("the write made in group 2 after the merge: %s", js(kv))
	}
	// A new group never reuses a retired id.
	s.must(202, "POST", "/v1/cluster/groups", `{"peers":[3,1,2]}`).json(&task)
	if task.Group != 3 {
		t.Fatalf("the next group is %d, want 3 (2 was retired)", task.Group)
	}
	waitTask(t, s, task.Id, func(x client.Task) bool { return x.Status == client.TaskStatusSucceeded }, 30*time.Second)
}

// TestGroupCreateResumesAfterTheControllerLeaderStops: the controller leader
// stops right after committing a group creation; the next leader finishes
// the task, and the stopped node starts its replica when it comes back.
func TestGroupCreateResumesAfterTheControllerLeaderStops(t *testing.T) {
	c, servers := groupCluster(t)
	ctl := controllerLeader(t, c)
	var idx int
	for i, n := range c.Nodes {
		if n == ctl {
			idx = i
		}
	}
	other := servers[(idx+1)%3]
	var task client.Task
	servers[idx].must(202, "POST", "/v1/cluster/groups", `{}`).json(&task)
	c.StopNode(idx)
	task = waitTask(t, other, task.Id, func(x client.Task) bool { return x.Status != client.TaskStatusRunning }, 30*time.Second)
	if task.Status != client.TaskStatusSucceeded {
		t.Fatalf("group creation across a controller leader stop: %s", js(task))
	}
	if id := other.node.ControllerLeader(); id == ctl.NodeID() || id == 0 {
		t.Fatalf("controller leader after the stop: node %d", id)
	}
	c.StartNode(idx)
	waitGroupRuns(t, other, int(task.Group), 20*time.Second)
}

// routeOf is the group hash slot hs routes to, as server s sees it.
func routeOf(t *testing.T, s *server, hs slotstore.HashSlot) int {
	t.Helper()
	var routes client.Routes
	s.must(200, "GET", "/v1/cluster/routes", "").json(&routes)
	return int(routes.HashSlots[hs].Group)
}

// TestGroupSplitAndMerge: a split moves three hash slots into a new group,
// slot after slot, with their rows; a merge moves them back and retires the
// emptied group, whose data leaves every node.
func TestGroupSplitAndMerge(t *testing.T) {
	c, servers := groupCluster(t)
	s := servers[0]
	slots := []slotstore.HashSlot{3, 4, 5}
	var keys []string
	for _, hs := range slots {
		keys = append(keys, keysInSlot(fmt.Sprintf("sm%d", hs), hs, 5)...)
	}
	for _, k := range keys {
		s.eventually(200, "PUT", "/v1/kv/"+k, `{"value":"`+k+`"}`)
	}
	// A watch of the moving keys, on another node, keeps its place through
	// the split and the merge: every write made from its start on — before,
	// while the slots move (some refused slot_migrating and retried), after —
	// is seen once, in order.
	// Started linearizably: no write acknowledged before it shows, even
	// on a node that lags (from its applied state it might).
	w := newWatcher(t, "resource=kv&prefix=sm&linearizable=true")
	w.connect(servers[1])
	written := map[string][]string{}
	n := 0
	writeOne := func() {
		k := keys[n%len(keys)]
		n++
		v := fmt.Sprintf("w%d", len(written[k]))
		s.eventually(200, "PUT", "/v1/kv/"+k, `{"value":"`+v+`"}`)
		written[k] = append(written[k], v)
	}
	writing := func(id int64) client.Task { // writes while task id runs
		for start := time.Now(); time.Since(start) < 60*time.Second; {
			writeOne()
			var x client.Task
			s.must(200, "GET", fmt.Sprintf("/v1/cluster/tasks/%d", id), "").json(&x)
			if x.Status != client.TaskStatusRunning {
				return x
			}
		}
		t.Fatalf("task %d still running after a minute", id)
		return client.Task{}
	}
	for range 5 {
		writeOne()
	}
	for _, bad := range []string{`{"hash_slots":[300]}`, `{"peers":[1]}`, `{"into":2}`} {
		if r := s.do("POST", "/v1/cluster/groups/1/split", bad); r.code != 400 {
			t.Fatalf("split %s: %d %s", bad, r.code, r.body)
		}
	}
	var task client.Task
	tr := s.must(202, "POST", "/v1/cluster/groups/1/split", `{"hash_slots":[5,3,4]}`)
	tr.json(&task)
	if task.Kind != client.TaskKindGroupSplit || task.Group != 1 || deref(task.ToGroup) != 2 || task.Phase != client.TaskPhaseStart ||
		deref(task.HashSlot) != 3 || len(deref(task.HashSlots)) != 3 {
		t.Fatalf("split task: %s", tr.body)
	}
	task = writing(task.Id)
	if task.Status != client.TaskStatusSucceeded || deref(task.Moved) != 3 || len(deref(task.HashSlots)) != 0 {
		t.Fatalf("split ended %s", js(task))
	}
	slotsAtWritten(t, s, slots, 2, written, "the split")
	task = client.Task{}
	s.must(202, "POST", "/v1/cluster/groups/2/merge", `{"into":1}`).json(&task)
	if task.Kind != client.TaskKindGroupMerge || task.Group != 2 || deref(task.ToGroup) != 1 || task.Phase != client.TaskPhaseTrack {
		t.Fatalf("merge task: %s", js(task))
	}
	task = writing(task.Id)
	if task.Status != client.TaskStatusSucceeded || deref(task.Moved) != 3 {
		t.Fatalf("merge ended %s", js(task))
	}
	s.eventually(404, "GET", "/v1/cluster/groups/2", "")
	slotsAtWritten(t, s, slots, 1, written, "the merge")
	waitNoKeys(t, c, 2)
	for range 5 {
		writeOne()
	}
	since := func(k string) []string { return w.values[k] }
	total := 0
	for _, vs := range written {
		total += len(vs)
	}
	for {
		seen := 0
		for _, k := range keys {
			seen += len(since(k))
		}
		if seen >= total {
			break
		}
		w.take(total - seen)
	}
	for _, k := range keys {
		if fmt.Sprint(since(k)) != fmt.Sprint(written[k]) {
			t.Fatalf("%s: the watch saw %v, the writes were %v", k, since(k), written[k])
		}
	}
}

// slotsAtWritten checks that every slot routes to group g and that every
// key of written reads back its last value there, after what happened.
func slotsAtWritten(t *testing.T, s *server, slots []slotstore.HashSlot, g int, written map[string][]string, after string) {
	t.Helper()
	for _, hs := range slots {
		if got := routeOf(t, s, hs); got != g {
			t.Fatalf("after %s hash slot %d routes to group %d, not %d", after, hs, got, g)
		}
	}
	for k, vs := range written {
		var kv client.KV
		s.eventually(200, "GET", "/v1/kv/"+k, "").json(&kv)
		if kv.Value != vs[len(vs)-1] {
			t.Fatalf("%s after %s: %s, want %s", k, after, js(kv), vs[len(vs)-1])
		}
	}
}

// slotsAt checks that every slot routes to group g and that every key
// (whose value is the key) reads back, after what happened.
func slotsAt(t *testing.T, s *server, slots []slotstore.HashSlot, g int, keys []string, after string) {
	t.Helper()
	written := map[string][]string{}
	for _, k := range keys {
		written[k] = []string{k}
	}
	slotsAtWritten(t, s, slots, g, written, after)
}

// waitNoKeys waits until no node holds a key of group g.
func waitNoKeys(t *testing.T, c *slotstoretest.Cluster, g slotstore.GroupID) {
	t.Helper()
	testutil.WaitFor(t, 10*time.Second, 50*time.Millisecond, func() (bool, string) {
		for i, n := range c.Nodes {
			if left, err := n.Testing().KeyCount(g, nil); err != nil || left != 0 {
				return false, fmt.Sprintf("node %d still holds %d keys of group %d (err %v)", i+1, left, g, err)
			}
		}
		return true, ""
	})
}

// TestGroupSplitAndMergeResumeAfterTheControllerLeaderStops: the controller
// leader stops right after a split started, and again after a merge
// started; the next leader carries each to its end.
func TestGroupSplitAndMergeResumeAfterTheControllerLeaderStops(t *testing.T) {
	c, servers := groupCluster(t)
	stopLeader := func() (*server, int) {
		t.Helper()
		ctl := controllerLeader(t, c)
		for i, n := range c.Nodes {
			if n == ctl {
				c.StopNode(i)
				return servers[(i+1)%3], i
			}
		}
		t.Fatal("no controller leader among the nodes")
		return nil, 0
	}
	keys := keysInSlot("resume", 9, 5)
	for _, k := range keys {
		servers[0].eventually(200, "PUT", "/v1/kv/"+k, `{"value":"`+k+`"}`)
	}
	var task client.Task
	controllerServer(t, c, servers).must(202, "POST", "/v1/cluster/groups/1/split", `{"hash_slots":[9,10]}`).json(&task)
	other, stopped := stopLeader()
	task = waitTask(t, other, task.Id, func(x client.Task) bool { return x.Status != client.TaskStatusRunning }, 60*time.Second)
	if task.Status != client.TaskStatusSucceeded || routeOf(t, other, 9) != 2 || routeOf(t, other, 10) != 2 {
		t.Fatalf("split across a controller leader stop: %s", js(task))
	}
	c.StartNode(stopped)
	servers[stopped] = serve(t, c.Nodes[stopped])
	waitGroupRuns(t, other, 2, 20*time.Second)
	controllerServer(t, c, servers).must(202, "POST", "/v1/cluster/groups/2/merge", `{"into":1}`).json(&task)
	other, _ = stopLeader()
	task = waitTask(t, other, task.Id, func(x client.Task) bool { return x.Status != client.TaskStatusRunning }, 60*time.Second)
	if task.Status != client.TaskStatusSucceeded || routeOf(t, other, 9) != 1 {
		t.Fatalf("merge across a controller leader stop: %s", js(task))
	}
	slotsAt(t, other, []slotstore.HashSlot{9, 10}, 1, keys, "the split and the merge")
}

// controllerServer is the server of the controller leader's node.
func controllerServer(t *testing.T, c *slotstoretest.Cluster, servers []*server) *server {
	t.Helper()
	ctl := controllerLeader(t, c)
	for i, n := range c.Nodes {
		if n == ctl {
			return servers[i]
		}
	}
	t.Fatal("no controller leader")
	return nil
}
