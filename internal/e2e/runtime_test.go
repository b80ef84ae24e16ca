package e2e

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/client"
)

// runtimeBody is a runtime write with replicas 1, 2, 3.
func runtimeBody(ce, le, leader uint64, lease int64) string {
	return fmt.Sprintf(`{"channel_epoch":%d,"leader_epoch":%d,"leader":%d,"replicas":[1,2,3],"isr":[1,2,3],"min_isr":2,"lease_until_ms":%d}`,
		ce, le, leader, lease)
}

func TestRuntimeEndToEnd(t *testing.T) {
	s := oneNode(t)
	const path = "/v1/channels/2/room-1/runtime"
	s.must(404, "GET", path, "")
	r := s.must(201, "POST", path, `{"channel_epoch":1,"leader_epoch":1,"leader":2,"replicas":[1,2,3],"isr":[2,3],"min_isr":2,`+
		`"status":"migrating","lease_until_ms":5000,"retention_through_seq":7,"write_fence":{"token":"tok-1","version":3,"reason":"switching","until_ms":9000}}`)
	routeHeaders(t, "create runtime", r)
	if r.header.Get("Location") != path {
		t.Fatalf("Location %q", r.header.Get("Location"))
	}
	var rt client.ChannelRuntime
	r.json(&rt)
	if rt.ChannelType != 2 || rt.ChannelId != "room-1" || rt.Leader != 2 || fmt.Sprint(rt.Isr) != "[2 3]" || rt.Status != "migrating" ||
		rt.LeaseUntilMs != 5000 || rt.RetentionThroughSeq != 7 || rt.WriteFence == nil || rt.WriteFence.Token != "tok-1" ||
		deref(rt.WriteFence.Version) != 3 || deref(rt.WriteFence.UntilMs) != 9000 || rt.CreatedAtMs == 0 || rt.Revision == 0 {
		t.Fatalf("created %s", r.body)
	}
	var got client.ChannelRuntime
	g := s.must(200, "GET", path, "")
	g.json(&got)
	if !reflect.DeepEqual(got, rt) {
		t.Fatalf("read %s, wrote %s", g.body, r.body)
	}
	if r := s.do("POST", path, runtimeBody(9, 9, 1, 0)); r.code != 409 || r.errCode() != "conflict" {
		t.Fatalf("second create: %d %s", r.code, r.body)
	}
	// A PUT without a fence clears it; status defaults to active.
	s.must(200, "PUT", path, runtimeBody(1, 2, 3, 6000)).json(&got)
	if got.WriteFence != nil || got.Status != "active" || got.Leader != 3 || got.CreatedAtMs != rt.CreatedAtMs || got.RetentionThroughSeq != 7 {
		t.Fatalf("put %s", js(got))
	}
	// Runtime meta needs no channel row.
	s.must(404, "GET", "/v1/channels/2/room-1", "")
	// PUT creates when absent.
	s.must(200, "PUT", "/v1/channels/2/room-2/runtime", runtimeBody(1, 1, 1, 0))
	s.must(204, "DELETE", path, "")
	s.must(404, "DELETE", path, "")
	s.must(404, "GET", path, "")
	s.must(404, "POST", path+"/retention", `{"expected_channel_epoch":1,"expected_leader":1,"through_seq":1}`)

	// Validation: cross-field rules answer 400 with the fields named.
	c0 := s.node.Stats().Commands
	for _, tc := range []struct{ body, field string }{
		{`{"channel_epoch":1,"leader_epoch":1,"leader":9,"replicas":[1,2],"isr":[9],"min_isr":1}`, "leader"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1,2],"isr":[1,3],"min_isr":1}`, "isr"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1,2],"isr":[2],"min_isr":1}`, "isr"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1,1],"isr":[1],"min_isr":1}`, "replicas"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1,2],"isr":[1],"min_isr":3}`, "min_isr"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1],"isr":[1],"min_isr":1,"status":"zombie"}`, "status"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1],"isr":[1],"min_isr":1,"write_fence":{"version":1}}`, "write_fence.token"},
		{`{"leader_epoch":1,"leader":1,"replicas":[1],"isr":[1],"min_isr":1}`, "channel_epoch"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":0,"replicas":[1],"isr":[1],"min_isr":1}`, "leader"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[],"isr":[1],"min_isr":1}`, "replicas"},
		{`{"channel_epoch":1,"leader_epoch":1,"leader":1,"replicas":[1],"isr":[1],"min_isr":1,"lease_until_ms":-1}`, "lease_until_ms"},
	} {
		r := s.do("PUT", "/v1/channels/2/bad/runtime", tc.body)
		if r.code != 400 || !strings.Contains(string(r.body), `"field":"`+tc.field+`"`) {
			t.Errorf("PUT %s: %d %s, want 400 naming %s", tc.body, r.code, r.body, tc.field)
		}
	}
	for _, p := range []string{"/v1/channels/0/x/runtime", "/v1/channels/1/a%20b/runtime", "/v1/channels/1/" + strings.Repeat("x", 129) + "/runtime"} {
		if r := s.do("GET", p, ""); r.code != 400 {
			t.Errorf("GET %s: %d", p, r.code)
		}
	}
	if c1 := s.node.Stats().Commands; c1 != c0 {
		t.Fatalf("rejected requests proposed %d commands", c1-c0)
	}
}

// TestRuntimeEpochFencing is the table of the runtime meta's fencing rules.
// Every case starts from the stored (channel_epoch 5, leader_epoch 3,
// leader 1, lease_until_ms 1000, retention_through_seq 50) and sends one
// write; it checks the status, the error code and what is stored after.
func TestRuntimeEpochFencing(t *testing.T) {
	s := oneNode(t)
	type stored struct {
		ce, le, leader int64
		lease          int64
		retention      int64
	}
	initial := stored{5, 3, 1, 1000, 50}
	for i, tc := range []struct {
		name   string
		method string // PUT …/runtime or POST …/runtime/retention
		body   string
		status int
		code   string
		after  stored
	}{
		{"older channel_epoch", "PUT", runtimeBody(4, 9, 1, 2000), 409, "epoch_stale", initial},
		{"older channel_epoch, other leader", "PUT", runtimeBody(4, 9, 2, 2000), 409, "epoch_stale", initial},
		{"same channel_epoch, older leader_epoch", "PUT", runtimeBody(5, 2, 1, 2000), 409, "epoch_stale", initial},
		{"same epochs, same leader", "PUT", runtimeBody(5, 3, 1, 2000), 200, "", stored{5, 3, 1, 2000, 50}},
		{"same epochs, other leader", "PUT", runtimeBody(5, 3, 2, 2000), 409, "conflict", initial},
		{"newer leader_epoch, other leader", "PUT", runtimeBody(5, 4, 2, 2000), 200, "", stored{5, 4, 2, 2000, 50}},
		{"newer channel_epoch, other leader", "PUT", runtimeBody(6, 0, 3, 2000), 200, "", stored{6, 0, 3, 2000, 50}},
		{"lease moving back keeps the stored lease", "PUT", runtimeBody(5, 3, 1, 10), 200, "", initial},
		{"newer epochs, lease moving back", "PUT", runtimeBody(6, 1, 2, 10), 200, "", stored{6, 1, 2, 1000, 50}},
		{"retention, wrong channel_epoch", "POST", `{"expected_channel_epoch":4,"expected_leader":1,"through_seq":100}`, 409, "conflict", initial},
		{"retention, wrong leader", "POST", `{"expected_channel_epoch":5,"expected_leader":2,"through_seq":100}`, 409, "conflict", initial},
		{"retention, lower through_seq", "POST", `{"expected_channel_epoch":5,"expected_leader":1,"through_seq":10}`, 200, "", initial},
		{"retention, equal through_seq", "POST", `{"expected_channel_epoch":5,"expected_leader":1,"through_seq":50}`, 200, "", initial},
		{"retention, higher through_seq", "POST", `{"expected_channel_epoch":5,"expected_leader":1,"through_seq":100}`, 200, "", stored{5, 3, 1, 1000, 100}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := fmt.Sprintf("/v1/channels/7/fence-%d/runtime", i)
			var first client.ChannelRuntime
			s.must(201, "POST", path, fmt.Sprintf(`{"channel_epoch":%d,"leader_epoch":%d,"leader":%d,"replicas":[1,2,3],"isr":[1,2,3],`+
				`"min_isr":2,"lease_until_ms":%d,"retention_through_seq":%d}`, initial.ce, initial.le, initial.leader, initial.lease, initial.retention)).json(&first)
			target := path
			if tc.method == "POST" {
				target += "/retention"
			}
			r := s.do(tc.method, target, tc.body)
			if r.code != tc.status || r.errCode() != tc.code {
				t.Fatalf("%s %s: %d %s, want %d %q", tc.method, target, r.code, r.body, tc.status, tc.code)
			}
			routeHeaders(t, tc.name, r)
			var now client.ChannelRuntime
			s.must(200, "GET", path, "").json(&now)
			got := stored{now.ChannelEpoch, now.LeaderEpoch, now.Leader, now.LeaseUntilMs, now.RetentionThroughSeq}
			if got != tc.after {
				t.Fatalf("stored %+v, want %+v", got, tc.after)
			}
			if tc.status == 200 {
				var answered client.ChannelRuntime
				r.json(&answered)
				if !reflect.DeepEqual(answered, now) {
					t.Fatalf("answered %s, stored %s", js(answered), js(now))
				}
			}
			// A refused write and an unchanged retention write nothing.
			if (tc.status != 200 || got == initial && tc.method == "POST") && now.Revision != first.Revision {
				t.Fatalf("revision %d moved from %d", now.Revision, first.Revision)
			}
		})
	}
}
