package raftnet

import (
	"testing"
	"time"

	pb "github.com/lni/dragonboat/v4/raftpb"
)

func TestHeardRecordsSenders(t *testing.T) {
	h := NewHeard()
	var at time.Duration
	h.now = func() time.Duration { return at }
	if _, ok := h.Ago(1001, 2); ok {
		t.Fatal("heard from nobody yet")
	}
	at = time.Second
	h.Record(pb.MessageBatch{Requests: []pb.Message{{ShardID: 1001, From: 2}, {ShardID: 1001, From: 2}, {ShardID: 1, From: 3}}})
	at = 3 * time.Second
	h.Record(pb.MessageBatch{Requests: []pb.Message{{ShardID: 1, From: 3}}})
	if d, ok := h.Ago(1001, 2); !ok || d != 2*time.Second {
		t.Fatalf("shard 1001 replica 2: %v %v", d, ok)
	}
	if d, ok := h.Ago(1, 3); !ok || d != 0 {
		t.Fatalf("shard 1 replica 3: %v %v", d, ok)
	}
	if _, ok := h.Ago(1001, 3); ok {
		t.Fatal("replica 3 of shard 1001 never sent anything")
	}
}

// TestValidateRemembersTheRule: remembered answers are the rule's, for good
// and bad addresses alike, asked once or many times.
func TestValidateRemembersTheRule(t *testing.T) {
	var tr Transport
	for range 3 {
		for addr, want := range map[string]bool{"127.0.0.1:9000": true, "node-1.example:63001": true, "no port": false, "": false} {
			if got := tr.Validate(addr); got != want {
				t.Fatalf("Validate(%q) = %v, want %v", addr, got, want)
			}
		}
	}
}
