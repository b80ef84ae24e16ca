package faults

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/slotmeta/slotmeta/internal/testutil"

	"github.com/lni/dragonboat/v4/config"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

func freeAddr(t *testing.T) string { return testutil.FreeAddr(t) }

// TestFaultRaftTransportCuts runs two wrapped dragonboat TCP transports on
// loopback: a cut direction refuses new connections and swallows batches on
// an established one, and the other direction is untouched.
func TestFaultRaftTransportCuts(t *testing.T) {
	n := NewNetwork()
	addr1, addr2 := freeAddr(t), freeAddr(t)
	n.Register(1, addr1)
	n.Register(2, addr2)
	got := make(chan uint64, 16) // ShardID of each batch node 2 receives
	start := func(self uint64, addr string, recv func(pb.MessageBatch)) *transport {
		f := n.RaftTransport(1)
		if self == 2 {
			f = n.RaftTransport(2)
		}
		if !f.Validate(addr) || f.Validate("no-port") {
			t.Fatal("Validate")
		}
		tr := f.Create(config.NodeHostConfig{RaftAddress: addr, DeploymentID: 1}, recv, func(pb.Chunk) bool { return true })
		if err := tr.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tr.Close() })
		return tr.(*transport)
	}
	tr1 := start(1, addr1, func(pb.MessageBatch) {})
	start(2, addr2, func(b pb.MessageBatch) { got <- b.Requests[0].ShardID })
	if tr1.Name() != "faults+go-tcp-transport" {
		t.Fatalf("wrapped %q, want dragonboat's TCP transport", tr1.Name())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := tr1.GetConnection(ctx, addr2)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	send := func(shard uint64) {
		t.Helper()
		b := pb.MessageBatch{DeploymentId: 1, SourceAddress: addr1, Requests: []pb.Message{{Type: pb.Heartbeat, ShardID: shard, From: 1, To: 2}}}
		if err := conn.SendMessageBatch(b); err != nil {
			t.Fatal(err)
		}
	}
	receive := func(want uint64) {
		t.Helper()
		select {
		case s := <-got:
			if s != want {
				t.Fatalf("received the batch of shard %d, want %d", s, want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("batch of shard %d not received", want)
		}
	}
	send(1)
	receive(1)

	n.DropOneWay(1, 2)
	send(2) // swallowed on the established connection
	if _, err := tr1.GetConnection(ctx, addr2); !errors.Is(err, ErrBlocked) {
		t.Fatalf("new connection over a cut link: %v", err)
	}
	if _, err := tr1.GetSnapshotConnection(ctx, addr2); !errors.Is(err, ErrBlocked) {
		t.Fatalf("new snapshot connection over a cut link: %v", err)
	}
	n.Heal()
	send(3)
	receive(3) // batches arrive in order: 2 would have come first
	if n.Dropped() != 3 {
		t.Fatalf("dropped %d, want 3 (one batch, two dials)", n.Dropped())
	}
}
