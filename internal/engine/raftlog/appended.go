package raftlog

import (
	"sync/atomic"

	pb "github.com/lni/dragonboat/v4/raftpb"
)

// Appended is what this process has written to one replica's Raft log: the
// index of the first entry it saved, and the highest index of an entry the
// state machine will see (an update entry; not a new term's no-op, not a
// configuration change). It lets a leader under a lease answer a read with
// no log query when its state machine has applied all of it
// (propose.LeasedReadIndex.ReadNow):
//
// A leader commits an entry only once a quorum holds it, and dragonboat
// counts a follower's acknowledgement in a step that comes after the step
// that saved the entry on the leader (engine.processSteps sends Replicate
// messages, then saves, and steps the replica again only after the save).
// So every entry the leader has committed is either one this process saved
// — recorded here before it is written — or older than First, in the log of
// an earlier process. A group of one voter is the exception: it commits in
// the step that appends, before the save, and sends the entry with that
// commit index to its non-voting replicas first, which may apply it and
// answer a read of it. Every entry a replica sends (Sending, called before
// a batch is written to the connection) is therefore recorded too.
//
// Both values only grow: an entry a follower saved and a new leader's log
// later replaced stays counted, and so does an entry sent and not yet
// committed, which can only make a read take the log query instead.
// Concurrency: first is written by the step worker of the replica's shard
// (under the log's mutex), maxUpdate by it and by the transport's send
// goroutines; both are read from any goroutine.
type Appended struct {
	first, maxUpdate atomic.Uint64
}

// Load returns the first index saved in this process (0: none yet) and the
// highest update entry saved since (0: none).
func (a *Appended) Load() (first, maxUpdate uint64) {
	if a == nil {
		return 0, 0
	}
	return a.first.Load(), a.maxUpdate.Load()
}

// record notes the entries of one save, before they are written.
func (a *Appended) record(ents []pb.Entry) {
	if len(ents) == 0 {
		return
	}
	if a.first.Load() == 0 {
		a.first.Store(ents[0].Index)
	}
	a.raise(ents)
}

// raise lifts maxUpdate to the last update entry of ents.
func (a *Appended) raise(ents []pb.Entry) {
	for i := len(ents) - 1; i >= 0; i-- {
		if ents[i].IsUpdateEntry() {
			for {
				cur := a.maxUpdate.Load()
				if ents[i].Index <= cur || a.maxUpdate.CompareAndSwap(cur, ents[i].Index) {
					return
				}
			}
		}
	}
}

// appended returns the record of a replica, creating it. Records are never
// dropped: a reader keeps the pointer for the life of its replica, and a
// replica id is never reused in a group.
func (l *commitLogDB) appended(k replicaKey) *Appended {
	if a, ok := l.recs.Load(k); ok {
		return a.(*Appended)
	}
	a, _ := l.recs.LoadOrStore(k, &Appended{})
	return a.(*Appended)
}

// Sending records the entries of the Replicate messages in a batch this
// node is about to write to a connection (raftnet.Transport.Sending): a
// receiver may apply them before this node's own save records them.
func (f *Factory) Sending(b pb.MessageBatch) {
	db := f.db.Load()
	if db == nil {
		return
	}
	for i := range b.Requests {
		m := &b.Requests[i]
		if m.Type == pb.Replicate && len(m.Entries) > 0 {
			db.appended(replicaKey{m.ShardID, m.From}).raise(m.Entries)
		}
	}
}

// Appended returns the record of what this process saved to or sent from a
// replica's log (nil before the NodeHost created its log). Take it before the
// replica starts: its first save is then recorded too.
func (f *Factory) Appended(shard, replica uint64) *Appended {
	db := f.db.Load()
	if db == nil {
		return nil
	}
	return db.appended(replicaKey{shard, replica})
}
