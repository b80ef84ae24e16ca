package main

import (
	"encoding/json"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestOutboxSurvivesACrash: the channel-side commit (subscribers and their
// outbox record) lands, the process is killed before any projection, and
// after the restart every membership appears exactly once; removals follow.
func TestOutboxSurvivesACrash(t *testing.T) {
	pc := procConfig{dataDir: t.TempDir(), api: freePort(t), raft: freePort(t), extra: []string{"--project-interval=-1s"}}
	p := startProc(t, pc)
	if code, body := p.do("POST", "/v1/channels", `{"channel_id":"room","channel_type":2}`); code != 201 {
		t.Fatalf("create channel: %d %s", code, body)
	}
	var uids []string
	for i := 0; i < 40; i++ {
		uids = append(uids, fmt.Sprintf("member-%d", i))
	}
	body, _ := json.Marshal(map[string]any{"uids": uids})
	if code, b := p.do("POST", "/v1/channels/2/room/subscribers", string(body)); code != 200 {
		t.Fatalf("add subscribers: %d %s", code, b)
	}
	// Add the same uids again in a second change: one more outbox record.
	if code, b := p.do("POST", "/v1/channels/2/room/subscribers", string(body)); code != 200 {
		t.Fatalf("re-add subscribers: %d %s", code, b)
	}
	pending := func() uint64 {
		code, b := p.do("GET", "/v1/channels/2/room", "")
		var ch struct {
			PendingProjection uint64 `json:"pending_projection"`
			SubscriberCount   uint64 `json:"subscriber_count"`
		}
		if code != 200 || json.Unmarshal(b, &ch) != nil || ch.SubscriberCount < 38 {
			t.Fatalf("channel: %d %s", code, b)
		}
		return ch.PendingProjection
	}
	if n := pending(); n != 1 {
		t.Fatalf("pending projection before the crash: %d, want 1 (the repeat changed nothing)", n)
	}
	if code, _ := p.do("GET", "/v1/users/member-0/memberships/2/room", ""); code != 404 {
		t.Fatalf("a membership appeared without a projector: %d", code)
	}
	_ = p.stop(syscall.SIGKILL)

	pc.extra = nil // the projector runs again
	p = startProc(t, pc)
	testutil.WaitUntil(t, 20*time.Second, 20*time.Millisecond, "the outbox drained after the restart", func() bool { return pending() == 0 })
	memberships := func(uid string) []string {
		code, b := p.do("GET", "/v1/users/"+uid+"/memberships?limit=1000", "")
		var page struct {
			Items []struct {
				ChannelType int    `json:"channel_type"`
				ChannelID   string `json:"channel_id"`
			} `json:"items"`
		}
		if code != 200 || json.Unmarshal(b, &page) != nil {
			t.Fatalf("memberships of %s: %d %s", uid, code, b)
		}
		var out []string
		for _, it := range page.Items {
			out = append(out, fmt.Sprintf("%d/%s", it.ChannelType, it.ChannelID))
		}
		return out
	}
	for _, uid := range uids {
		if got := memberships(uid); len(got) != 1 || got[0] != "2/room" {
			t.Fatalf("%s: memberships %v, want exactly [2/room]", uid, got)
		}
	}
	// Removing subscribers is projected too: the membership leaves the list.
	if code, b := p.do("POST", "/v1/channels/2/room/subscribers/remove", `{"uids":["member-0","member-1"]}`); code != 200 {
		t.Fatalf("remove: %d %s", code, b)
	}
	testutil.WaitFor(t, 20*time.Second, 20*time.Millisecond, func() (bool, string) {
		m0, m1, n := memberships("member-0"), memberships("member-1"), pending()
		return len(m0) == 0 && len(m1) == 0 && n == 0, fmt.Sprintf("removal not projected: %v %v, %d pending", m0, m1, n)
	})
	if got := memberships("member-2"); len(got) != 1 {
		t.Fatalf("an unrelated membership changed: %v", got)
	}
	if err := p.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
}
