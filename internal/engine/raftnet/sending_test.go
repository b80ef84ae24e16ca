package raftnet

import (
	"context"
	"slices"
	"testing"

	_ "github.com/lni/dragonboat/v4" // links the transport newTCPTransport names
	"github.com/lni/dragonboat/v4/config"
	"github.com/lni/dragonboat/v4/raftio"
	pb "github.com/lni/dragonboat/v4/raftpb"
)

// TestSendingSeesEveryBatchBeforeTheWrite: the hook runs before the
// connection writes a batch (a receiver can act on nothing the hook has not
// seen), for every connection of the transport.
func TestSendingSeesEveryBatchBeforeTheWrite(t *testing.T) {
	var events []string
	inner := &recordingFactory{events: &events}
	tr := Transport{Inner: inner, Heard: NewHeard(), Sending: func(b pb.MessageBatch) {
		events = append(events, "hook "+b.SourceAddress)
	}}.Create(config.NodeHostConfig{}, func(pb.MessageBatch) {}, func(pb.Chunk) bool { return true })
	for _, target := range []string{"a:1", "b:1"} {
		conn, err := tr.GetConnection(context.Background(), target)
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.SendMessageBatch(pb.MessageBatch{SourceAddress: target}); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"hook a:1", "write a:1", "hook b:1", "write b:1"}
	if len(events) != len(want) {
		t.Fatalf("events %v, want %v", events, want)
	}
	for i := range want {
		if events[i] != want[i] {
			t.Fatalf("events %v, want %v", events, want)
		}
	}
}

type recordingFactory struct{ events *[]string }

func (f *recordingFactory) Create(config.NodeHostConfig, raftio.MessageHandler, raftio.ChunkHandler) raftio.ITransport {
	return recordingTransport{events: f.events}
}
func (f *recordingFactory) Validate(string) bool { return true }

type recordingTransport struct {
	raftio.ITransport
	events *[]string
}

func (r recordingTransport) GetConnection(context.Context, string) (raftio.IConnection, error) {
	return recordingConn{events: r.events}, nil
}

type recordingConn struct {
	raftio.IConnection
	events *[]string
}

func (c recordingConn) SendMessageBatch(b pb.MessageBatch) error {
	*c.events = append(*c.events, "write "+b.SourceAddress)
	return nil
}

// TestReceivedSnapshotBytesPerReplica: every snapshot chunk the transport
// hands to dragonboat and dragonboat takes counts for the replica it is for
// (a learner's catch-up progress), and in the metrics hook; other replicas
// count none, nor does a chunk turned away.
func TestReceivedSnapshotBytesPerReplica(t *testing.T) {
	h := NewHeard()
	var handle raftio.ChunkHandler
	inner := chunkCapture{handle: &handle}
	var metered int
	Transport{Inner: inner, Heard: h, SnapshotBytes: func(sent bool, n int) {
		if !sent {
			metered += n
		}
	}}.Create(config.NodeHostConfig{}, func(pb.MessageBatch) {}, func(c pb.Chunk) bool { return c.ChunkId != 99 })
	for _, c := range []pb.Chunk{{ShardID: 7, ReplicaID: 4, Data: make([]byte, 100)}, {ShardID: 7, ReplicaID: 4, Data: make([]byte, 50)},
		{ShardID: 8, ReplicaID: 4, Data: make([]byte, 9)}} {
		if !handle(c) {
			t.Fatal("the chunk was refused")
		}
	}
	// A chunk dragonboat turns away is no progress.
	if handle(pb.Chunk{ShardID: 7, ReplicaID: 4, ChunkId: 99, Data: make([]byte, 1000)}) {
		t.Fatal("a refused chunk was accepted")
	}
	if got := h.SnapshotBytes(7, 4); got != 150 {
		t.Fatalf("shard 7 replica 4 received %d bytes, want 150", got)
	}
	if got, other := h.SnapshotBytes(8, 4), h.SnapshotBytes(7, 5); got != 9 || other != 0 {
		t.Fatalf("shard 8: %d (want 9), shard 7 replica 5: %d (want 0)", got, other)
	}
	if metered != 159 {
		t.Fatalf("the metrics hook counted %d received bytes, want 159", metered)
	}
}

// chunkCapture is a transport factory that keeps the chunk handler it is
// given.
type chunkCapture struct{ handle *raftio.ChunkHandler }

func (f chunkCapture) Create(_ config.NodeHostConfig, _ raftio.MessageHandler, ch raftio.ChunkHandler) raftio.ITransport {
	*f.handle = ch
	return recordingTransport{events: new([]string)}
}
func (f chunkCapture) Validate(string) bool { return true }

// TestHoldDropsWhatWouldBeStored: while Hold says so, appends and snapshot
// chunks are dropped before dragonboat sees them — and counted — while
// heartbeats, votes and read indexes pass, and the sender still counts as
// heard; once Hold is false everything passes again.
func TestHoldDropsWhatWouldBeStored(t *testing.T) {
	h := NewHeard()
	var handle raftio.MessageHandler
	var chunk raftio.ChunkHandler
	hold := true
	var heldMsgs, heldChunks int
	var got []pb.MessageType
	Transport{Inner: batchCapture{handle: &handle, chunk: &chunk}, Heard: h, Hold: func() bool { return hold },
		Held: func(m, c int) { heldMsgs += m; heldChunks += c }}.Create(config.NodeHostConfig{},
		func(b pb.MessageBatch) {
			for _, m := range b.Requests {
				got = append(got, m.Type)
			}
		}, func(pb.Chunk) bool { return true })
	batch := pb.MessageBatch{SourceAddress: "a:1", Requests: []pb.Message{
		{Type: pb.Heartbeat, ShardID: 3, From: 1, To: 2}, {Type: pb.Replicate, ShardID: 3, From: 1, To: 2, Entries: []pb.Entry{{Index: 9}}},
		{Type: pb.RequestVote, ShardID: 4, From: 1, To: 2}, {Type: pb.InstallSnapshot, ShardID: 5, From: 1, To: 2}, {Type: pb.ReadIndexResp, ShardID: 3, From: 1, To: 2}}}
	handle(batch)
	if want := []pb.MessageType{pb.Heartbeat, pb.RequestVote, pb.ReadIndexResp}; !slices.Equal(got, want) {
		t.Fatalf("passed %v while held, want %v", got, want)
	}
	if len(batch.Requests) != 5 {
		t.Fatal("the caller's batch was changed")
	}
	if _, ok := h.Ago(3, 1); !ok {
		t.Fatal("a held batch's sender was not recorded as heard")
	}
	if chunk(pb.Chunk{ShardID: 5, ReplicaID: 2, Data: make([]byte, 10)}) {
		t.Fatal("a snapshot chunk was taken while held")
	}
	handle(pb.MessageBatch{Requests: []pb.Message{{Type: pb.Replicate, ShardID: 3, From: 1, To: 2}}}) // all held: nothing handed on
	if heldMsgs != 3 || heldChunks != 1 || len(got) != 3 {
		t.Fatalf("held %d messages and %d chunks (want 3, 1); passed %v", heldMsgs, heldChunks, got)
	}
	hold = false
	got = nil
	handle(batch)
	if len(got) != 5 || !chunk(pb.Chunk{ShardID: 5, ReplicaID: 2}) {
		t.Fatalf("once no longer held: passed %v", got)
	}
}

// batchCapture is a transport factory that keeps the handlers it is given.
type batchCapture struct {
	handle *raftio.MessageHandler
	chunk  *raftio.ChunkHandler
}

func (f batchCapture) Create(_ config.NodeHostConfig, mh raftio.MessageHandler, ch raftio.ChunkHandler) raftio.ITransport {
	*f.handle, *f.chunk = mh, ch
	return recordingTransport{events: new([]string)}
}
func (f batchCapture) Validate(string) bool { return true }
