package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/cluster"
	"github.com/slotmeta/slotmeta/internal/engine/propose"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestFaultIsolatedLeaderLeaseEndsBeforeANewLeaderWrites: the leader answers
// linearizable reads under its lease (no ReadIndex round), and once it is
// cut off it stops before the majority can elect another leader and
// acknowledge a write: no read through the isolated node that starts after
// the majority's write was acknowledged returns the older value, and the
// last read it answers started within a lease of the cut.
func TestFaultIsolatedLeaderLeaseEndsBeforeANewLeaderWrites(t *testing.T) {
	c, w, old := faultStart(t)
	isolated := c.Nodes[old-1]
	majority := others(c, old)
	k := w.key()
	put := func(n *cluster.Node, v string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			res, _, err := n.Propose(ctx, &meta.PutKV{Key: k, Value: []byte(v)})
			cancel()
			if err == nil && res.OK() {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("write %s=%s: %v %v", k, v, err, res)
			}
		}
	}
	get := func(timeout time.Duration) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		v, _, err := isolated.Read(ctx, &meta.GetKV{HashSlot: slotstore.HashSlotOfString(k), Key: k}, meta.Linearizable)
		if err != nil {
			return "", err
		}
		kv, _ := v.(*meta.KV)
		if kv == nil {
			return "", nil
		}
		return string(kv.Value), nil
	}
	put(isolated, "v1", 5*time.Second)
	// Leases start once every replica of the group reported its Raft
	// timing (timing.go): read until the leader's lease answers.
	before := isolated.Stats().LeaseServed()
	for deadline := time.Now().Add(5 * time.Second); isolated.Stats().LeaseServed() == before; {
		if v, err := get(2 * time.Second); err != nil || v != "v1" {
			t.Fatalf("read through the leader: %q, %v", v, err)
		}
		if time.Now().After(deadline) {
			t.Fatal("the leader answered no read under its lease")
		}
	}

	c.Net.Isolate(old)
	cut := time.Now()
	var mu sync.Mutex
	var lastServed time.Time // start of the latest read the isolated node answered
	var answered []struct {
		start time.Time
		v     string
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(1)
	go func() {
		defer bg.Done()
		for {
			select {
			case <-stop:
				return
			default:
			}
			start := time.Now()
			v, err := get(300 * time.Millisecond)
			if err == nil {
				mu.Lock()
				lastServed = start
				answered = append(answered, struct {
					start time.Time
					v     string
				}{start, v})
				mu.Unlock()
			}
		}
	}()
	put(majority[0], "v2", 10*time.Second)
	acked := time.Now()
	// Keep reading through the isolated node for a while after the ack.
	time.Sleep(300 * time.Millisecond) // the reader's window after the ack, not a wait for a condition
	close(stop)
	bg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for _, a := range answered {
		if a.start.After(acked) && a.v != "v2" {
			t.Errorf("a read through the isolated old leader started %v after the majority acknowledged v2 and returned %q",
				a.start.Sub(acked), a.v)
			break
		}
	}
	lease := propose.LeaseDuration(20*time.Millisecond, 10) // the harness's timing
	if !lastServed.IsZero() && lastServed.Sub(cut) > lease {
		t.Errorf("the isolated node answered a read that started %v after the cut (lease %v)", lastServed.Sub(cut), lease)
	}
	t.Logf("%d reads answered by the isolated node after the cut, the last started %v after it; v2 acknowledged %v after it",
		len(answered), lastServed.Sub(cut), acked.Sub(cut))
}

// TestFollowerReadsAskTheLeadersLease: a linearizable read through a
// follower asks the leader's node for its read index (answered from the
// leader's lease, batched across groups) instead of running a ReadIndex
// round, and still sees every write acknowledged before it began — each
// read follows the write of its key through the leader at once, before the
// follower can be expected to have applied it by itself.
func TestFollowerReadsAskTheLeadersLease(t *testing.T) {
	c, w, leader := faultStart(t)
	lead := c.Nodes[leader-1]
	followers := others(c, leader)
	w.mustPut(lead, 5*time.Second)
	k0 := w.acked[len(w.acked)-1]
	for deadline := time.Now().Add(5 * time.Second); lead.Stats().LeaseServed() == 0; { // timing reported (timing.go)
		if err := readKey(lead, k0, meta.Linearizable); err != nil || time.Now().After(deadline) {
			t.Fatalf("no lease on the leader: %v", err)
		}
	}
	before := followers[0].Stats().RemoteRounds + followers[1].Stats().RemoteRounds
	for i := range 200 {
		k := w.key()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		put(t, ctx, lead, k, []byte(k))
		cancel()
		if err := readKey(followers[i%2], k, meta.Linearizable); err != nil {
			t.Fatalf("read %s through follower n%d right after its write was acknowledged: %v", k, followers[i%2].NodeID(), err)
		}
	}
	after := followers[0].Stats().RemoteRounds + followers[1].Stats().RemoteRounds
	if after-before < 100 {
		t.Fatalf("only %d of 200 follower reads were answered through the leader's lease", after-before)
	}
}
