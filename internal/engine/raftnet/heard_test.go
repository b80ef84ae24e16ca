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

// TestUnansweredTellsSilenceFromNoAnswer: a request (heartbeat, replicate)
// waits from its send until any message of its replica arrives; nothing
// sent — a quiesced group — is no wait however long the silence; answers
// and quiesce notices ask nothing.
func TestUnansweredTellsSilenceFromNoAnswer(t *testing.T) {
	h := NewHeard()
	var at time.Duration
	h.now = func() time.Duration { return at }
	if w := h.Unanswered(1001, 2); w != 0 {
		t.Fatalf("nothing sent yet: %v", w)
	}
	at = time.Second
	h.Record(pb.MessageBatch{Requests: []pb.Message{{ShardID: 1001, From: 2, Type: pb.HeartbeatResp}}})
	at = 10 * time.Second // quiet: nothing asked
	if w := h.Unanswered(1001, 2); w != 0 {
		t.Fatalf("a silent group asked nothing: %v", w)
	}
	h.Asked(pb.MessageBatch{Requests: []pb.Message{
		{ShardID: 1001, To: 2, Type: pb.Quiesce}, {ShardID: 1001, To: 3, Type: pb.ReplicateResp}, {ShardID: 1, To: 2, Type: pb.HeartbeatResp}}})
	at = 11 * time.Second
	if w := h.Unanswered(1001, 2) + h.Unanswered(1001, 3) + h.Unanswered(1, 2); w != 0 {
		t.Fatalf("quiesce notices and answers ask nothing: %v", w)
	}
	h.Asked(pb.MessageBatch{Requests: []pb.Message{{ShardID: 1001, To: 2, Type: pb.Heartbeat}, {ShardID: 1001, To: 3, Type: pb.Replicate}}})
	at = 12 * time.Second
	h.Asked(pb.MessageBatch{Requests: []pb.Message{{ShardID: 1001, To: 2, Type: pb.Heartbeat}}}) // the oldest still counts
	at = 13500 * time.Millisecond
	if w := h.Unanswered(1001, 2); w != 2500*time.Millisecond {
		t.Fatalf("replica 2 asked at 11 s, unanswered at 13.5 s: %v", w)
	}
	h.Record(pb.MessageBatch{Requests: []pb.Message{{ShardID: 1001, From: 3, Type: pb.ReplicateResp}}})
	if w := h.Unanswered(1001, 3); w != 0 {
		t.Fatalf("replica 3 answered: %v", w)
	}
	if d, ok := h.Ago(1001, 2); !ok || d != 12500*time.Millisecond {
		t.Fatalf("replica 2 last heard at 1 s: %v %v", d, ok)
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
