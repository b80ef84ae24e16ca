package leader

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// TestAViewServedToAnotherNodeShowsItsWrites: a node's controller proposal
// returns once its own replica applied it, which the leader's may not have
// yet; a view the leader serves to that node waits until the leader's
// replica applied what the group committed (SyncController), so a balancer
// paused through another node reads paused (e2e's TestBalancerDrainAndRemove
// once read "not paused" there).
func TestAViewServedToAnotherNodeShowsItsWrites(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	host := bootstrappedHost(t, clock)
	ctx := context.Background()
	host.lagging = []controller.Command{{SetBalancer: &controller.SetBalancer{Paused: true}}} // proposed through node 2
	l := New(Config{NodeID: 1, Host: host, Peers: noPeers{}, Now: clock, Life: ctx, ObserveInterval: -1, RequestTimeout: time.Second})
	serve := serveView(l, func(ctx context.Context) slotstore.BalancerStatus { st, _ := l.Balancer(ctx); return st })
	rec := httptest.NewRecorder()
	serve(ctx, rec, httptest.NewRequest("GET", "/balancer", nil))
	var st slotstore.BalancerStatus
	if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil {
		t.Fatalf("%d %s: %v", rec.Code, rec.Body, err)
	}
	if !st.Paused {
		t.Fatalf("the balancer paused through another node reads %+v", st)
	}
}
