package e2e

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/slotmeta/slotmeta/client"
)

func TestChannelMigrationsEndToEnd(t *testing.T) {
	s := oneNode(t)
	const base = "/v1/channels/1/hot-room/migrations"
	r := s.must(201, "POST", base, `{"kind":"replica_move","source_node":1,"target_node":4}`)
	routeHeaders(t, "create migration", r)
	var m client.ChannelMigration
	r.json(&m)
	if m.TaskId != 1 || m.Phase != "created" || !m.Active || m.Kind != "replica_move" || m.SourceNode != 1 || m.TargetNode != 4 ||
		r.header.Get("Location") != base+"/1" {
		t.Fatalf("created %s, Location %q", js(m), r.header.Get("Location"))
	}
	// One active task per channel.
	if r := s.do("POST", base, `{"kind":"leader_transfer","source_node":1,"target_node":2}`); r.code != 409 || r.errCode() != "conflict" {
		t.Fatalf("a second active task: %d %s", r.code, r.body)
	}
	// The same channel id with another type is another channel.
	s.must(201, "POST", "/v1/channels/2/hot-room/migrations", `{"kind":"leader_transfer","source_node":1,"target_node":2}`)

	// Compare-and-set steps.
	s.must(200, "POST", base+"/1/advance", `{"expected_phase":"created","phase":"copying","note":"3 segments"}`).json(&m)
	if m.Phase != "copying" || m.Note != "3 segments" {
		t.Fatalf("advanced %s", js(m))
	}
	if r := s.do("POST", base+"/1/advance", `{"expected_phase":"created","phase":"copying"}`); r.code != 409 || r.errCode() != "conflict" {
		t.Fatalf("a stale expected_phase: %d %s", r.code, r.body)
	}
	for _, body := range []string{
		`{"expected_phase":"copying","phase":"created"}`,    // backwards
		`{"expected_phase":"copying","phase":"copying"}`,    // no step
		`{"expected_phase":"copying","phase":"aborted"}`,    // abort is …/abort
		`{"expected_phase":"copying","phase":"flying"}`,     // unknown
		`{"expected_phase":"copying"}`,                      // missing
		`{"expected_phase":"copying","phase":"done","x":1}`, // unknown field
	} {
		if r := s.do("POST", base+"/1/advance", body); r.code != 400 || r.errCode() != "invalid_argument" {
			t.Errorf("advance %s: %d %s", body, r.code, r.body)
		}
	}
	s.must(404, "POST", base+"/9/advance", `{"expected_phase":"created","phase":"copying"}`)
	s.must(400, "POST", base+"/0/advance", `{"expected_phase":"created","phase":"copying"}`)
	s.must(400, "GET", base+"/abc", "")
	// Phases may be skipped; done finishes the task.
	s.must(200, "POST", base+"/1/advance", `{"expected_phase":"copying","phase":"switching"}`)
	s.must(200, "POST", base+"/1/advance", `{"expected_phase":"switching","phase":"done"}`).json(&m)
	if m.Phase != "done" || m.Active || deref(m.FinishedAtMs) == 0 {
		t.Fatalf("done %s", js(m))
	}
	if r := s.do("POST", base+"/1/abort", ""); r.code != 409 || r.errCode() != "conflict" {
		t.Fatalf("aborting a done task: %d %s", r.code, r.body)
	}
	s.must(200, "GET", base+"/1", "").json(&m)
	if m.Phase != "done" {
		t.Fatalf("read %s", js(m))
	}

	// Next task: id 2; abort (with and without a note); aborting again is 200 unchanged.
	s.must(201, "POST", base, `{"kind":"leader_transfer","source_node":4,"target_node":1}`).json(&m)
	if m.TaskId != 2 {
		t.Fatalf("second task %s", js(m))
	}
	var a1, a2 client.ChannelMigration
	s.must(200, "POST", base+"/2/abort", `{"note":"operator"}`).json(&a1)
	s.must(200, "POST", base+"/2/abort", "").json(&a2)
	if a1.Phase != "aborted" || a1.Active || a1.Note != "operator" || !reflect.DeepEqual(a2, a1) {
		t.Fatalf("abort %s, again %s", js(a1), js(a2))
	}
	if r := s.do("POST", base+"/2/advance", `{"expected_phase":"created","phase":"copying"}`); r.code != 409 {
		t.Fatalf("advancing an aborted task: %d %s", r.code, r.body)
	}
	s.must(404, "POST", base+"/7/abort", "")

	// More finished tasks, then the listing: newest first, every task once.
	for range 3 {
		var n client.ChannelMigration
		s.must(201, "POST", base, `{"kind":"replica_move","source_node":2,"target_node":3}`).json(&n)
		s.must(200, "POST", fmt.Sprintf("%s/%d/abort", base, n.TaskId), "")
	}
	taskKey := func(it map[string]any) string { return fmt.Sprint(it["task_id"]) }
	for _, limit := range []int{1, 2, 1000} {
		onceInOrder(t, fmt.Sprintf("limit %d", limit), s.walk(base, limit, taskKey), []string{"5", "4", "3", "2", "1"})
	}
	onceInOrder(t, "a channel without tasks", s.walk("/v1/channels/1/quiet/migrations", 1, taskKey), nil)
	s.must(404, "GET", "/v1/channels/1/quiet/migrations/1", "")

	for _, body := range []string{
		`{"kind":"teleport","source_node":1,"target_node":2}`,
		`{"kind":"replica_move","source_node":1,"target_node":1}`,
		`{"kind":"replica_move","source_node":0,"target_node":1}`,
		`{"kind":"replica_move","target_node":1}`,
	} {
		if r := s.do("POST", "/v1/channels/1/other/migrations", body); r.code != 400 {
			t.Errorf("create %s: %d %s", body, r.code, r.body)
		}
	}
}
