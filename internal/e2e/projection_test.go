package e2e

import (
	"encoding/json"
	"testing"
	"time"
)

// TestProjectionFollowsChannelDeleteAndRecreate: deleting a channel takes
// its subscribers' memberships with it, and joining the re-created channel
// is projected even though its own counters started over.
func TestProjectionFollowsChannelDeleteAndRecreate(t *testing.T) {
	s := oneProjectingNode(t)
	drained := func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			r := s.do("GET", "/v1/channels/2/pj", "")
			var ch struct {
				PendingProjection int `json:"pending_projection"`
			}
			_ = json.Unmarshal(r.body, &ch)
			if r.code == 404 || (r.code == 200 && ch.PendingProjection == 0) {
				// A deleted channel has nothing to count: wait for the
				// memberships themselves below.
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("projection not drained: %d %s", r.code, r.body)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	membership := func(uid string) (int, bool) {
		r := s.do("GET", "/v1/users/"+uid+"/memberships/2/pj", "")
		var m struct{ Tombstone bool }
		_ = json.Unmarshal(r.body, &m)
		return r.code, m.Tombstone
	}
	waitMembership := func(uid string, wantTomb bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			code, tomb := membership(uid)
			if code == 200 && tomb == wantTomb {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: membership %d tombstone=%v, want tombstone=%v", uid, code, tomb, wantTomb)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	s.must(201, "POST", "/v1/channels", `{"channel_id":"pj","channel_type":2}`)
	s.must(200, "POST", "/v1/channels/2/pj/subscribers", `{"uids":["u1","u3"]}`)
	drained()
	waitMembership("u3", false)
	s.must(200, "POST", "/v1/channels/2/pj/subscribers/remove", `{"uids":["u1"]}`)
	s.must(200, "POST", "/v1/channels/2/pj/subscribers", `{"uids":["u1"]}`)
	s.must(200, "POST", "/v1/channels/2/pj/subscribers/remove", `{"uids":["u1"]}`)
	drained()
	waitMembership("u1", true)
	// Deleting the channel: u3 leaves with it.
	s.must(204, "DELETE", "/v1/channels/2/pj", "")
	waitMembership("u3", true)
	// Re-created, and u1 joins again: projected, though the channel's own
	// subscriber counter started over.
	s.must(201, "POST", "/v1/channels", `{"channel_id":"pj","channel_type":2}`)
	s.must(200, "POST", "/v1/channels/2/pj/subscribers", `{"uids":["u1"]}`)
	drained()
	waitMembership("u1", false)
}
