package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// TestTransferAwayRevokesTheLease: a read on the leader grants its lease,
// which answers the reads after it; the note that a transfer away is about
// to be asked ends it, and reads within the hold run rounds without granting
// a new one.
func TestTransferAwayRevokesTheLease(t *testing.T) {
	cfg := testConfig(t, t.TempDir(), freeAddr(t))
	cfg.GroupCount = 1
	n := startNode(t, cfg)
	defer n.Close()
	g := slotstore.GroupID(1)
	shard := controller.ShardOf(g)
	read := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if _, _, err := n.Read(ctx, &meta.GetKV{HashSlot: 0, Key: "k"}, meta.Linearizable); err != nil {
			t.Fatal(err)
		}
	}
	lg := n.replicas.Get(g)
	var term uint64
	for i := 0; ; i++ {
		read()
		_, tm, _, err := n.nh.GetLeaderID(shard)
		if err != nil {
			t.Fatal(err)
		}
		if term = tm; lg.Lease.Valid(term) {
			break
		}
		if i == 100 {
			t.Fatal("a read on the leader granted no lease")
		}
	}
	// Reads under the lease of a group that took no write since its
	// election (its commit index is the leader's no-op, which the state
	// machine never sees) are answered by the lease — at once (ReadNow) or
	// by a round's log query — not by ReadIndex rounds.
	leaseServed := func() uint64 { _, r := lg.Lease.Stats(); return r + lg.Leased.NowReads() }
	served := leaseServed()
	for range 20 {
		read()
	}
	if after := leaseServed(); after-served < 10 {
		t.Fatalf("only %d of 20 reads under a valid lease were answered by it", after-served)
	}
	n.replicas.TransferAway(shard)
	if lg.Lease.Valid(term) {
		t.Fatal("the lease survived the note of a transfer away")
	}
	grants, _ := lg.Lease.Stats()
	read()
	read()
	if after, _ := lg.Lease.Stats(); after != grants || lg.Lease.Valid(term) {
		t.Fatalf("reads within the transfer's hold granted a lease (%d → %d grants)", grants, after)
	}
}
