package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
	"github.com/slotmeta/slotmeta/internal/testutil"
)

// TestAKVListingSurvivesSplitsAndSlotMoves (issue 54, item 1): a listing of
// the keys with a prefix, page by page through GET /v1/kv, while a split
// moves half of group 1's hash slots into a new group between two pages and
// a live hash-slot move runs across others, and new keys are written: every
// key that existed throughout is listed, none twice, nothing outside the
// prefix — the cursor names a hash slot and a key, never a group.
func TestAKVListingSurvivesSplitsAndSlotMoves(t *testing.T) {
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 2, Tune: func(cfg *cluster.Config) {
		cfg.ObserveInterval = 100 * time.Millisecond // steps the tasks
		cfg.TaskPhaseTimeout = 10 * time.Second
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	api := c.ServeAPIs()[1].URL // not the controller's first node: listings are forwarded as any read
	via := c.Nodes[0]
	const n = 300
	throughout := map[string]bool{}
	for i := range n {
		k := fmt.Sprintf("list/%03d", i)
		put(t, ctx, c.Nodes[i%3], k, []byte("v-"+k))
		throughout[k] = true
	}
	for i := range 40 {
		put(t, ctx, c.Nodes[i%3], fmt.Sprintf("lisa/%d", i), []byte("x")) // shares "lis", not the prefix
	}

	seen := map[string]int{}
	cursor, pages := "", 0
	page := func() bool { // one page; false when the listing is done
		t.Helper()
		q := url.Values{"prefix": {"list/"}, "limit": {"23"}}
		if cursor != "" {
			q.Set("cursor", cursor)
		}
		resp, err := http.Get(api + "/v1/kv?" + q.Encode())
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p struct {
			Items []struct {
				Key   string `json:"key"`
				Value string `json:"value"`
			} `json:"items"`
			NextCursor string `json:"next_cursor"`
		}
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil {
			t.Fatalf("page %d: %d", pages, resp.StatusCode)
		}
		pages++
		for _, it := range p.Items {
			if !strings.HasPrefix(it.Key, "list/") || it.Value != "v-"+it.Key {
				t.Fatalf("listed %+v", it)
			}
			seen[it.Key]++
		}
		cursor = p.NextCursor
		return cursor != ""
	}
	page()
	page()

	// A split between two pages: half of group 1's hash slots into a new group.
	slots := via.Routes().Table().SlotsOf(1)
	split := runTask(ctx, t, via, "split group 1", func(ctx context.Context) (slotstore.Task, error) {
		return via.Operator().CreateSplit(ctx, 1, slots[len(slots)/2:], nil)
	})
	ng := split.ToGroup
	for i := range 20 {
		k := fmt.Sprintf("list/new-%d", i)
		put(t, ctx, c.Nodes[i%3], k, []byte("v-"+k))
	}
	page()

	// A live move of group 2's last hash slots into the new group, while
	// pages are read.
	moving := via.Routes().Table().SlotsOf(2)
	hs := moving[len(moving)-1]
	var task slotstore.Task
	testutil.WaitFor(t, 30*time.Second, 50*time.Millisecond, func() (bool, string) {
		var err error
		task, err = via.Operator().CreateSlotMigration(ctx, hs, ng)
		return err == nil, fmt.Sprint(err)
	})
	for page() && pages < 8 {
	}
	testutil.WaitFor(t, time.Minute, 50*time.Millisecond, func() (bool, string) {
		task, _ = via.Operator().Task(task.ID)
		return task.Status != controller.TaskRunning, fmt.Sprintf("the move of hash slot %d: %+v", hs, task)
	})
	if task.Status != controller.TaskSucceeded {
		t.Fatalf("the move of hash slot %d: %+v", hs, task)
	}
	for page() {
		if pages > 200 {
			t.Fatal("the listing does not end")
		}
	}
	for k, times := range seen {
		if times != 1 {
			t.Errorf("%s listed %d times", k, times)
		}
	}
	for k := range throughout {
		if seen[k] == 0 {
			t.Errorf("%s, there throughout, was not listed", k)
		}
	}
	t.Logf("%d keys in %d pages; split into group %d, hash slot %d moved while listing", len(seen), pages, ng, hs)
}
