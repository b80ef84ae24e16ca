package httpapi

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/routing"
)

func TestClusterRoutes(t *testing.T) {
	f := newFakeTable(t, pagingTable(t, 4))
	f.router.SetLeader(3, 0, 9) // group 3 lost its leader
	w := do(t, newHandler(t, f), "GET", "/v1/cluster/routes", "")
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var body struct {
		Revision  uint64                       `json:"revision"`
		HashSlots []map[string]json.RawMessage `json:"hash_slots"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
		t.Fatal(err)
	}
	if body.Revision != 4 || len(body.HashSlots) != slotstore.HashSlotCount {
		t.Fatalf("revision %d, %d rows", body.Revision, len(body.HashSlots))
	}
	for s, row := range body.HashSlots {
		g := pagingTable(t, 4).Group(slotstore.HashSlot(s))
		if string(row["hash_slot"]) != strconv.Itoa(s) || string(row["group"]) != strconv.Itoa(int(g)) || string(row["config_epoch"]) != "3" {
			t.Fatalf("slot %d row %v", s, row)
		}
		_, hasLeader := row["leader_node"]
		_, hasTerm := row["leader_term"]
		if g == 3 && (hasLeader || hasTerm) {
			t.Fatalf("slot %d shows a leader for a leaderless group: %v", s, row)
		}
		if g != 3 && (string(row["leader_node"]) != "1" || string(row["leader_term"]) != "7") {
			t.Fatalf("slot %d row %v", s, row)
		}
	}

	f.router = routing.NewRouter()
	w = do(t, newHandler(t, f), "GET", "/v1/cluster/routes", "")
	if w.Code != 503 || decodeError(t, w).Code != slotstore.CodeRouteNotReady {
		t.Fatalf("no table: %d %s", w.Code, w.Body)
	}
}

func TestResolveRoutes(t *testing.T) {
	f := newFakeTable(t, pagingTable(t, 4))
	f.router.SetLeader(3, 0, 9)
	keys := []string{"alice", "bob", "a/b", "用户", "alice"}
	var leaderless string
	for i := 0; leaderless == ""; i++ {
		if k := "k" + strconv.Itoa(i); pagingTable(t, 4).Group(slotstore.HashSlotOfString(k)) == 3 {
			leaderless = k
		}
	}
	keys = append(keys, leaderless)
	body, _ := json.Marshal(map[string][]string{"keys": keys})
	w := do(t, newHandler(t, f), "POST", "/v1/cluster/routes/resolve", string(body))
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var out resolvedJSON
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil {
		t.Fatal(err)
	}
	if out.Revision != 4 || len(out.Routes) != len(keys) {
		t.Fatalf("%s", w.Body)
	}
	for i, r := range out.Routes {
		hs := slotstore.HashSlotOfString(keys[i])
		if r.Key != keys[i] || r.HashSlot != hs || r.Group != pagingTable(t, 4).Group(hs) {
			t.Fatalf("route %d: %+v", i, r)
		}
		if keys[i] == leaderless {
			if r.Ready || r.LeaderNode != 0 || !strings.Contains(r.Error, "route_not_ready") {
				t.Fatalf("leaderless %+v", r)
			}
		} else if !r.Ready || r.LeaderNode != 1 || r.LeaderTerm != 7 || r.ConfigEpoch != 3 || r.Error != "" {
			t.Fatalf("route %d: %+v", i, r)
		}
	}

	f.router = routing.NewRouter()
	w = do(t, newHandler(t, f), "POST", "/v1/cluster/routes/resolve", `{"keys":["a"]}`)
	if err := json.Unmarshal(w.Body.Bytes(), &out); err != nil || w.Code != 200 || out.Routes[0].Ready || out.Routes[0].Error == "" {
		t.Fatalf("no table: %d %s", w.Code, w.Body)
	}
}

// TestDecisionsLimit: ?limit answers the newest decisions only, and
// next_cursor pages to the oldest as every listing does; a bad limit or
// cursor is refused.
func TestDecisionsLimit(t *testing.T) {
	f := newFake(t, 1)
	for i := range 5 {
		f.Decide(slotstore.Decision{AtMs: int64(i), Group: 1, Kind: slotstore.DecisionSkip})
	}
	h := newHandler(t, f)
	var seqs []uint64
	path := "/v1/cluster/decisions?limit=2"
	for pages := 0; path != ""; pages++ {
		w := do(t, h, "GET", path, "")
		var page struct {
			Items      []slotstore.Decision `json:"items"`
			NextCursor string               `json:"next_cursor"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &page); err != nil || w.Code != 200 || pages > 3 {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body)
		}
		for _, d := range page.Items {
			seqs = append(seqs, d.Seq)
		}
		path = ""
		if page.NextCursor != "" {
			path = "/v1/cluster/decisions?limit=2&cursor=" + page.NextCursor
		}
	}
	if fmt.Sprint(seqs) != "[5 4 3 2 1]" {
		t.Fatalf("paged decisions: %v, want 5 to 1", seqs)
	}
	if w := do(t, h, "GET", "/v1/cluster/decisions?cursor=nope", ""); w.Code != 400 {
		t.Fatalf("cursor=nope: %d", w.Code)
	}
	if w := do(t, h, "GET", "/v1/cluster/decisions?limit=0", ""); w.Code != 400 {
		t.Fatalf("limit=0: %d", w.Code)
	}
	if w := do(t, h, "GET", "/v1/cluster/decisions?limit=501", ""); w.Code != 400 {
		t.Fatalf("limit=501: %d", w.Code)
	}
	if w := do(t, h, "GET", "/v1/cluster/decisions?limit=3", ""); w.Code != 200 {
		t.Fatalf("limit=3: %d %s", w.Code, w.Body)
	}
}
