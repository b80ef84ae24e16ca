package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// keysInSlot returns n keys with the prefix that hash to hash slot hs.
func keysInSlot(prefix string, hs slotstore.HashSlot, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if k := fmt.Sprintf("%s-%d", prefix, i); slotstore.HashSlotOfString(k) == hs {
			out = append(out, k)
		}
	}
	return out
}

// TestHashSlotMigration moves one hash slot from group 1 to group 2, step by
// step: writes during the fence get 503 slot_migrating, every row arrives,
// RouteRevision rises, nothing stays behind on the source, and a client with
// the old route revision is told so.
func TestHashSlotMigration(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = -1 // the test drives the task one step at a time
	}})
	servers := make([]*server, 3)
	for i, n := range c.Nodes {
		servers[i] = serve(t, n)
	}
	s := servers[0]
	const hs = slotstore.HashSlot(7) // group 1 owns slots 0–127
	keys := keysInSlot("hs", hs, 40)
	users := keysInSlot("user", hs, 10)
	for i, k := range keys {
		s.eventually(200, "PUT", "/v1/kv/"+k, fmt.Sprintf(`{"value":"v%d"}`, i))
	}
	for _, u := range users {
		s.eventually(201, "POST", "/v1/users", fmt.Sprintf(`{"uid":%q}`, u))
	}
	// An idempotent request answered by the source replays from the
	// target: its idempotency record moves with the slot.
	idem := keysInSlot("idem", hs, 1)[0]
	idemBody := fmt.Sprintf(`{"uid":%q,"name":"once"}`, idem)
	s.must(201, "POST", "/v1/users", idemBody, "Idempotency-Key", "before-the-move")
	var task client.Task
	tr := s.must(202, "POST", fmt.Sprintf("/v1/cluster/hash-slots/%d/migrations", hs), `{"to_group":2}`)
	tr.json(&task)
	if task.Kind != client.TaskKindSlotMigration || task.Group != 1 || deref(task.ToGroup) != 2 || task.Phase != client.TaskPhaseTrack {
		t.Fatalf("task: %s", tr.body)
	}
	if r := s.do("POST", "/v1/cluster/hash-slots/300/migrations", `{"to_group":2}`); r.code != 400 {
		t.Fatalf("slot 300: %d", r.code)
	}
	ctl := controllerLeader(t, c)
	// The task was created through another node, which answered once its
	// own replica applied it: the controller leader's may apply it a moment
	// later (CI stepped a task the leader did not have yet).
	testutil.WaitFor(t, 10*time.Second, 10*time.Millisecond, func() (bool, string) {
		_, err := ctl.Operator().Task(uint64(task.Id))
		return err == nil, fmt.Sprint(err)
	})
	step := func() slotstore.Task {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctl.Testing().Leader().TasksOnce(ctx)
		cur, err := ctl.Operator().Task(uint64(task.Id))
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	// Live: tracked and copied, the slot still takes writes; the catch-up
	// carries them over.
	for _, want := range []slotstore.TaskPhase{controller.PhaseCopy, controller.PhaseCatchUp} {
		if cur := step(); cur.Phase != want {
			t.Fatalf("step to %s: %+v", want, cur)
		}
		s.must(200, "PUT", "/v1/kv/"+keys[1], `{"value":"during `+string(want)+`"}`)
	}
	if cur := step(); cur.Phase != controller.PhaseFence || cur.Cursor == nil || cur.Cursor.Index == 0 {
		t.Fatalf("after the catch-up: %+v", cur)
	}
	if cur := step(); cur.Phase != controller.PhaseDrain {
		t.Fatalf("after the fence step: %+v", cur)
	}
	// Fenced: writes are refused (retryable), reads still served.
	r := s.do("PUT", "/v1/kv/"+keys[0], `{"value":"during"}`)
	if r.code != 503 || r.errCode() != "slot_migrating" || r.header.Get("Retry-After") == "" {
		t.Fatalf("a write during the fence: %d %s", r.code, r.body)
	}
	s.must(200, "GET", "/v1/kv/"+keys[0], "")
	for i := 0; i < 10; i++ {
		cur := step()
		if cur.Status == controller.TaskSucceeded {
			break
		}
		if cur.Status != controller.TaskRunning {
			t.Fatalf("task ended %+v", cur)
		}
	}
	if cur, _ := ctl.Operator().Task(uint64(task.Id)); cur.Status != controller.TaskSucceeded || cur.Phase != controller.PhaseDone {
		t.Fatalf("task: %+v", cur)
	}
	// Every node follows the new table (revision 2, slot → group 2).
	testutil.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
		for i, srv := range servers {
			var routes client.Routes
			srv.must(200, "GET", "/v1/cluster/routes", "").json(&routes)
			if routes.Revision != 2 || routes.HashSlots[hs].Group != 2 {
				return false, fmt.Sprintf("node %d routes: revision %d, slot %d → group %d", i+1, routes.Revision, hs, routes.HashSlots[hs].Group)
			}
		}
		return true, ""
	})
	// Every row arrived, through every node.
	for _, srv := range servers {
		for i, k := range keys {
			var kv client.KV
			r := srv.eventually(200, "GET", "/v1/kv/"+k, "")
			r.json(&kv)
			want := fmt.Sprintf("v%d", i)
			if i == 1 {
				want = "during catch_up" // written while the slot was moving
			}
			if kv.Value != want || r.header.Get("X-Slot-Group") != "2" {
				t.Fatalf("%s: %q from group %s", k, kv.Value, r.header.Get("X-Slot-Group"))
			}
		}
		for _, u := range users {
			srv.eventually(200, "GET", "/v1/users/"+u, "")
		}
	}
	again := s.must(201, "POST", "/v1/users", idemBody, "Idempotency-Key", "before-the-move")
	if again.header.Get("Idempotent-Replayed") != "true" || again.header.Get("X-Slot-Group") != "2" {
		t.Fatalf("the idempotent request after the move: replayed %q, from group %q", again.header.Get("Idempotent-Replayed"), again.header.Get("X-Slot-Group"))
	}
	// Nothing of the slot stays behind in group 1 on any node.
	slot := hs
	testutil.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
		for i, n := range c.Nodes {
			left, err := n.Testing().KeyCount(1, &slot)
			if err != nil {
				t.Fatal(err)
			}
			if left != 0 {
				return false, fmt.Sprintf("node %d keeps %d rows of hash slot %d in group 1", i+1, left, hs)
			}
		}
		return true, ""
	})
	// Writes go to the new group; an old route revision is refused.
	var kv client.KV
	s.eventually(200, "PUT", "/v1/kv/"+keys[0], `{"value":"after"}`).json(&kv)
	if r := s.do("PUT", "/v1/kv/"+keys[0], `{"value":"x"}`, "X-Route-Revision", "1"); r.code != 409 || r.errCode() != "route_revision_mismatch" {
		t.Fatalf("old route revision: %d %s", r.code, r.body)
	}
}

// TestHashSlotMovesCanBeTurnedOff: with the switch off, migrations, splits
// and merges are refused and nothing is started.
func TestHashSlotMovesCanBeTurnedOff(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 2, Tune: func(cfg *cluster.Config) { cfg.DisableHashSlotMoves = true }})
	s := serve(t, c.Nodes[0])
	for _, r := range []struct{ path, body string }{
		{"/v1/cluster/hash-slots/7/migrations", `{"to_group":2}`},
		{"/v1/cluster/groups/1/split", `{}`},
		{"/v1/cluster/groups/2/merge", `{"into":1}`},
	} {
		if got := s.do("POST", r.path, r.body); got.code != 403 || got.errCode() != "permission_denied" {
			t.Fatalf("POST %s with moves off: %d %s", r.path, got.code, got.body)
		}
	}
	s.must(200, "GET", "/v1/cluster/tasks", "")
	if ts := c.Nodes[0].Operator().Tasks(); len(ts) != 0 {
		t.Fatalf("tasks started with moves off: %+v", ts)
	}
}

// TestSlotMoveThatTimesOutLeavesTheSource: the target group loses its
// quorum while a slot moves into it; the move's phase times out and the move
// aborts — the source keeps the slot, unfenced, with every row, and serves
// writes at once. With the target back, asking again moves the slot from the
// start, every row with it.
func TestSlotMoveThatTimesOutLeavesTheSource(t *testing.T) {
	// 5 nodes, RF 3: group 1 on nodes 1–3, group 2 on nodes 2–4; nodes 3 and
	// 4 down leave group 2 without a quorum, group 1 and the controller with one.
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 5, Groups: 2, ReplicationFactor: 3, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond
		cfg.TaskPhaseTimeout = time.Second
	}})
	s := serve(t, c.Nodes[0])
	const hs = slotstore.HashSlot(7) // group 1 owns slots 0–127
	keys := keysInSlot("abort", hs, 10)
	for i, k := range keys {
		s.eventually(200, "PUT", "/v1/kv/"+k, fmt.Sprintf(`{"value":"v%d"}`, i))
	}
	c.StopNode(2)
	c.StopNode(3)
	// The controller may have led from a stopped node: wait for its next
	// leader before asking (a proposal meanwhile would time out).
	testutil.WaitUntil(t, 10*time.Second, 20*time.Millisecond, "a controller leader among the running nodes", func() bool {
		l := c.Nodes[0].ControllerLeader()
		return l != 0 && l != 3 && l != 4
	})
	var task client.Task
	s.must(202, "POST", fmt.Sprintf("/v1/cluster/hash-slots/%d/migrations", hs), `{"to_group":2}`).json(&task)
	task = waitTask(t, s, task.Id, func(x client.Task) bool { return x.Status != client.TaskStatusRunning }, 30*time.Second)
	if task.Status != client.TaskStatusFailed || !strings.Contains(deref(task.Error), "aborted, the source keeps the slot") {
		t.Fatalf("move into a group without a quorum: %s", js(task))
	}
	// The source serves the slot, writes included, at once.
	r := s.must(200, "PUT", "/v1/kv/"+keys[0], `{"value":"after the abort"}`)
	if g := r.header.Get("X-Slot-Group"); g != "1" {
		t.Fatalf("a write after the abort went to group %s", g)
	}
	for i, k := range keys[1:] {
		var kv client.KV
		s.must(200, "GET", "/v1/kv/"+k, "").json(&kv)
		if kv.Value != fmt.Sprintf("v%d", i+1) {
			t.Fatalf("%s after the abort: %s", k, js(kv))
		}
	}
	// The target back, the same move again starts over and succeeds.
	c.StartNode(2)
	c.StartNode(3)
	s.must(202, "POST", fmt.Sprintf("/v1/cluster/hash-slots/%d/migrations", hs), `{"to_group":2}`).json(&task)
	task = waitTask(t, s, task.Id, func(x client.Task) bool { return x.Status != client.TaskStatusRunning }, 60*time.Second)
	if task.Status != client.TaskStatusSucceeded || task.Attempt < 2 {
		t.Fatalf("the move asked again: %s", js(task))
	}
	var kv client.KV
	r = s.eventually(200, "GET", "/v1/kv/"+keys[0], "")
	r.json(&kv)
	if kv.Value != "after the abort" || r.header.Get("X-Slot-Group") != "2" {
		t.Fatalf("%s after the move: %s from group %s", keys[0], js(kv), r.header.Get("X-Slot-Group"))
	}
}
