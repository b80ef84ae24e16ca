package main

import (
	"context"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"sync"
	"time"
)

// Routes is a route-aware client's view of a slotmeta cluster: for every
// hash slot (CRC32-IEEE of the key mod 256, as the server computes it) the
// API of its group's leader and of the nodes holding its replicas, read from
// GET /v1/cluster/routes, /v1/cluster/groups and /v1/cluster/nodes. Writes and
// reads go to the leader (under its lease a linearizable read there sends
// no message at all; ADR 0012), to a replica while the leader is unknown, so
// no request takes a peer hop while the view is right; when it is wrong the
// server forwards, so a stale view costs a hop, never an error.
//
// Concurrency: For may be called from any goroutine; Refresh and Run from
// one (Run is owned by its caller and ends with ctx).
type Routes struct {
	eps    []string
	token  string
	client *http.Client

	mu       sync.RWMutex
	leader   [256]string
	replicas [256][]string
}

// NewRoutes reads routes through eps (any node answers).
func NewRoutes(eps []string, token string, namespaces bool) *Routes {
	tr := &http.Transport{DialContext: hostDialer(3*time.Second, namespaces).DialContext, MaxIdleConnsPerHost: 4}
	return &Routes{eps: eps, token: token, client: &http.Client{Timeout: 3 * time.Second, Transport: tr}}
}

func keySlot(key string) int { return int(crc32.ChecksumIEEE([]byte(key)) % 256) }

// For is the endpoint for key: the leader's, or for a read whose leader is
// unknown a replica's (spread picks among them); "" while the slot's route
// is unknown.
func (r *Routes) For(key string, write bool, spread int) string {
	hs := keySlot(key)
	r.mu.RLock()
	defer r.mu.RUnlock()
	if write || r.leader[hs] != "" || len(r.replicas[hs]) == 0 {
		return r.leader[hs]
	}
	reps := r.replicas[hs]
	return reps[(spread%len(reps)+len(reps))%len(reps)]
}

func (r *Routes) get(ctx context.Context, ep, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, ep+path, nil)
	if err != nil {
		return err
	}
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d", path, resp.StatusCode)
	}
	return json.Unmarshal(b, out)
}

// Refresh reads the routes once, through the first endpoint that answers.
func (r *Routes) Refresh(ctx context.Context) error {
	var last error
	for _, ep := range r.eps {
		var nodes struct {
			Items []struct {
				ID      uint64 `json:"id"`
				APIAddr string `json:"api_addr"`
				State   string `json:"state"`
			} `json:"items"`
		}
		var routes struct {
			HashSlots []struct {
				HashSlot   int    `json:"hash_slot"`
				Group      uint32 `json:"group"`
				LeaderNode uint64 `json:"leader_node"`
			} `json:"hash_slots"`
		}
		var groups struct {
			Items []struct {
				ID     uint32   `json:"id"`
				Voters []uint64 `json:"voters"`
			} `json:"items"`
		}
		if last = r.get(ctx, ep, "/v1/cluster/nodes", &nodes); last != nil {
			continue
		}
		if last = r.get(ctx, ep, "/v1/cluster/routes", &routes); last != nil {
			continue
		}
		if last = r.get(ctx, ep, "/v1/cluster/groups", &groups); last != nil {
			continue
		}
		api := map[uint64]string{}
		for _, n := range nodes.Items {
			if n.APIAddr != "" && n.State != "removed" {
				api[n.ID] = "http://" + n.APIAddr
			}
		}
		voters := map[uint32][]string{}
		for _, g := range groups.Items {
			for _, v := range g.Voters {
				if a := api[v]; a != "" {
					voters[g.ID] = append(voters[g.ID], a)
				}
			}
		}
		var leader [256]string
		var replicas [256][]string
		for _, s := range routes.HashSlots {
			if s.HashSlot < 0 || s.HashSlot >= 256 {
				continue
			}
			leader[s.HashSlot] = api[s.LeaderNode]
			replicas[s.HashSlot] = voters[s.Group]
		}
		r.mu.Lock()
		r.leader, r.replicas = leader, replicas
		r.mu.Unlock()
		return nil
	}
	return last
}

// Run refreshes the routes every interval until ctx ends.
func (r *Routes) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_ = r.Refresh(rctx)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
