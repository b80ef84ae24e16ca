package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/client"
	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestProjectionFollowsChannelDeleteAndRecreate: deleting a channel takes
// its subscribers' memberships with it, and joining the re-created channel
// is projected even though its own counters started over.
func TestProjectionFollowsChannelDeleteAndRecreate(t *testing.T) {
	s := oneProjectingNode(t)
	drained := func() {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
			r := s.do("GET", "/v1/channels/2/pj", "")
			var ch client.Channel
			_ = json.Unmarshal(r.body, &ch)
			// A deleted channel has nothing to count: wait for the
			// memberships themselves below.
			return r.code == 404 || (r.code == 200 && ch.PendingProjection == 0),
				fmt.Sprintf("projection not drained: %d %s", r.code, r.body)
		})
	}
	membership := func(uid string) (int, bool) {
		r := s.do("GET", "/v1/users/"+uid+"/memberships/2/pj", "")
		var m client.Membership
		_ = json.Unmarshal(r.body, &m)
		return r.code, m.Tombstone
	}
	waitMembership := func(uid string, wantTomb bool) {
		t.Helper()
		testutil.WaitFor(t, 10*time.Second, 20*time.Millisecond, func() (bool, string) {
			code, tomb := membership(uid)
			return code == 200 && tomb == wantTomb, fmt.Sprintf("%s: membership %d tombstone=%v, want tombstone=%v", uid, code, tomb, wantTomb)
		})
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

// TestProjectionDrainsABacklogInAnyOrder: a backlog larger than one scan
// page, with users joining and leaving the same channels several times, is
// projected concurrently (records in any order) and still ends exactly at
// the channels' final subscriber sets, with nothing left pending.
func TestProjectionDrainsABacklogInAnyOrder(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 1, Groups: 2,
		Tune: func(cfg *cluster.Config) { cfg.ProjectInterval = -1 }})
	s := serve(t, c.Nodes[0])
	channels := []string{"bk1", "bk2", "bk3"}
	for _, ch := range channels {
		s.must(201, "POST", "/v1/channels", `{"channel_id":"`+ch+`","channel_type":2}`)
	}
	// 3 channels × 120 records: every uid of a channel is added, some are
	// removed and re-added, some removed for good.
	want := map[string]map[string]bool{} // channel → uid → subscribed
	records := 0
	for _, ch := range channels {
		want[ch] = map[string]bool{}
		for i := 0; i < 40; i++ {
			uid := fmt.Sprintf("%s-u%d", ch, i)
			s.must(200, "POST", "/v1/channels/2/"+ch+"/subscribers", `{"uids":["`+uid+`"]}`)
			s.must(200, "POST", "/v1/channels/2/"+ch+"/subscribers/remove", `{"uids":["`+uid+`"]}`)
			records += 2
			want[ch][uid] = false
			if i%3 != 0 {
				s.must(200, "POST", "/v1/channels/2/"+ch+"/subscribers", `{"uids":["`+uid+`"]}`)
				records++
				want[ch][uid] = true
			}
		}
	}
	if records <= 256 {
		t.Fatalf("the backlog (%d records) must exceed one scan page", records)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acked := 0
	for rounds := 0; ; rounds++ {
		n, err := c.Nodes[0].Testing().ProjectOnce(ctx)
		if err != nil {
			t.Fatalf("round %d: %v", rounds, err)
		}
		if n == 0 {
			break
		}
		acked += n
		if rounds > 20 {
			t.Fatalf("still projecting after %d rounds", rounds)
		}
	}
	if acked != records {
		t.Fatalf("acknowledged %d records, wrote %d", acked, records)
	}
	for _, ch := range channels {
		var got client.Channel
		s.must(200, "GET", "/v1/channels/2/"+ch, "").json(&got)
		if got.PendingProjection != 0 {
			t.Fatalf("%s: %d records still pending", ch, got.PendingProjection)
		}
		for uid, subscribed := range want[ch] {
			var m client.Membership
			s.must(200, "GET", "/v1/users/"+uid+"/memberships/2/"+ch, "").json(&m)
			if m.Tombstone == subscribed {
				t.Fatalf("%s in %s: tombstone=%v, subscribed=%v", uid, ch, m.Tombstone, subscribed)
			}
		}
	}
}
