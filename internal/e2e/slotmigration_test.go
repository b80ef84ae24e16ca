package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"slotmeta/client"
	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/cluster"
	"slotmeta/internal/slotstore/controller"
	"slotmeta/internal/slotstore/slotstoretest"
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
		cfg.EnableHashSlotMigration = true
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
	var task client.Task
	tr := s.must(202, "POST", fmt.Sprintf("/v1/cluster/hash-slots/%d/migrations", hs), `{"to_group":2}`)
	tr.json(&task)
	if task.Kind != client.TaskKindSlotMigration || task.Group != 1 || deref(task.ToGroup) != 2 || task.Phase != client.TaskPhaseFence {
		t.Fatalf("task: %s", tr.body)
	}
	if r := s.do("POST", "/v1/cluster/hash-slots/300/migrations", `{"to_group":2}`); r.code != 400 {
		t.Fatalf("slot 300: %d", r.code)
	}
	ctl := controllerLeader(t, c)
	step := func() slotstore.Task {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ctl.TasksOnce(ctx)
		cur, err := ctl.Task(uint64(task.Id))
		if err != nil {
			t.Fatal(err)
		}
		return cur
	}
	if cur := step(); cur.Phase != controller.PhaseCopy {
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
	if cur, _ := ctl.Task(uint64(task.Id)); cur.Status != controller.TaskSucceeded || cur.Phase != controller.PhaseDone {
		t.Fatalf("task: %+v", cur)
	}
	// Every node follows the new table (revision 2, slot → group 2).
	for i, srv := range servers {
		deadline := time.Now().Add(10 * time.Second)
		for {
			var routes client.Routes
			srv.must(200, "GET", "/v1/cluster/routes", "").json(&routes)
			if routes.Revision == 2 && routes.HashSlots[hs].Group == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d routes: revision %d, slot %d → group %d", i+1, routes.Revision, hs, routes.HashSlots[hs].Group)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Every row arrived, through every node.
	for _, srv := range servers {
		for i, k := range keys {
			var kv client.KV
			r := srv.eventually(200, "GET", "/v1/kv/"+k, "")
			r.json(&kv)
			if kv.Value != fmt.Sprintf("v%d", i) || r.header.Get("X-Slot-Group") != "2" {
				t.Fatalf("%s: %q from group %s", k, kv.Value, r.header.Get("X-Slot-Group"))
			}
		}
		for _, u := range users {
			srv.eventually(200, "GET", "/v1/users/"+u, "")
		}
	}
	// Nothing of the slot stays behind in group 1 on any node.
	slot := hs
	for i, n := range c.Nodes {
		deadline := time.Now().Add(10 * time.Second)
		for {
			left, err := n.Testing().KeyCount(1, &slot)
			if err != nil {
				t.Fatal(err)
			}
			if left == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("node %d keeps %d rows of hash slot %d in group 1", i+1, left, hs)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Writes go to the new group; an old route revision is refused.
	var kv client.KV
	s.eventually(200, "PUT", "/v1/kv/"+keys[0], `{"value":"after"}`).json(&kv)
	if r := s.do("PUT", "/v1/kv/"+keys[0], `{"value":"x"}`, "X-Route-Revision", "1"); r.code != 409 || r.errCode() != "route_revision_mismatch" {
		t.Fatalf("old route revision: %d %s", r.code, r.body)
	}
}

func TestHashSlotMigrationIsOffByDefault(t *testing.T) {
	s := oneNode(t)
	if r := s.do("POST", "/v1/cluster/hash-slots/7/migrations", `{"to_group":2}`); r.code != 403 || r.errCode() != "permission_denied" {
		t.Fatalf("migration without the flag: %d %s", r.code, r.body)
	}
}
