package cluster_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
	"github.com/slotmeta/slotmeta/internal/testkit/slotstoretest"
)

// TestForwardedWritesShareRequests: many concurrent writes through a node
// that does not lead the group travel to the leader in shared batch
// requests, each answered on its own; every one is applied exactly once and
// reads back through the leader.
func TestForwardedWritesShareRequests(t *testing.T) {
	// No preferred-leader moves during the test (ObserveInterval -1).
	c := slotstoretest.Start(t, slotstoretest.Options{Nodes: 3, Groups: 1,
		Tune: func(cfg *cluster.Config) { cfg.ObserveInterval = -1 }})
	leader := -1
	waitUntil(t, 10*time.Second, "a leader of group 1", func() bool {
		leader = int(leaderOf(c.Nodes[0])) - 1
		return leader >= 0
	})
	follower := (leader + 1) % 3
	via := c.Nodes[follower]
	const writers, each = 48, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				key := fmt.Sprintf("fb-%d-%d", w, i)
				var err error
				for {
					var res meta.Result
					res, _, err = via.Propose(ctx, &meta.PutKV{Key: key, Value: []byte(key)})
					if err == nil && !res.OK() {
						err = res.Err()
					}
					// An election under -race load answers "no leader" or
					// "not leader": nothing was proposed, so a client
					// retries; the deadline bounds it.
					code := slotstore.ErrorCode(err)
					if (code != slotstore.CodeRouteNotReady && code != slotstore.CodeNotLeader) || ctx.Err() != nil {
						break
					}
					time.Sleep(20 * time.Millisecond) // a client pacing its retry (bounded by ctx)
				}
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", key, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	batches, cmds := via.Stats().Forward.Batches, via.Stats().Forward.Batched
	t.Logf("%d writes through node %d (leader %d): %d batch requests carried %d of them", writers*each, follower+1, leader+1, batches, cmds)
	if batches == 0 || cmds < 2*batches {
		t.Fatalf("no batching: %d batches, %d commands", batches, cmds)
	}
	// Every write left the follower alone or in a batch (a retried one more
	// than once).
	if singles := via.Stats().Forward.Singles; singles+cmds < writers*each {
		t.Fatalf("%d writes forwarded alone and %d in batches, want at least %d", singles, cmds, writers*each)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for w := 0; w < writers; w++ {
		for i := 0; i < each; i++ {
			key := fmt.Sprintf("fb-%d-%d", w, i)
			v, _, err := c.Nodes[leader].Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(key), Key: key}, meta.Linearizable)
			kv, _ := v.(*meta.KV)
			if err != nil || kv == nil || string(kv.Value) != key || kv.CreateRevision != kv.Revision {
				t.Fatalf("%s: %+v %v", key, kv, err)
			}
		}
	}
}
