package raftlog

import (
	"errors"
	"fmt"

	pb "github.com/lni/dragonboat/v4/raftpb"
)

// Tail is what a stopped replica's log holds past an index (issue 29: a
// lost-quorum recovery applies what the survivor logged and reports it).
type Tail struct {
	// Term and Commit are the replica's Raft state as saved (the commit
	// it knew, raised by a commit-only save kept in memory: logdb.go).
	Term, Commit uint64
	// Last is its last log index.
	Last uint64
	// Entries are the entries past the index asked for, up to Last, at
	// most the bytes asked for (Complete false when more were left).
	Entries  []pb.Entry
	Complete bool
}

// ReadTail reads the log of a replica that does not run past index after.
func (f *Factory) ReadTail(shard, replica, after, maxBytes uint64) (Tail, error) {
	db := f.db.Load()
	if db == nil {
		return Tail{}, errors.New("raftlog: no log yet (the NodeHost creates it)")
	}
	ss, err := db.GetSnapshot(shard, replica)
	if err != nil {
		return Tail{}, fmt.Errorf("raftlog: snapshot of replica %d: %w", replica, err)
	}
	rs, err := db.ReadRaftState(shard, replica, ss.Index)
	if err != nil {
		return Tail{}, fmt.Errorf("raftlog: state of replica %d: %w", replica, err)
	}
	t := Tail{Term: rs.State.Term, Commit: rs.State.Commit, Last: ss.Index, Complete: true}
	if rs.EntryCount > 0 {
		t.Last = rs.FirstIndex + rs.EntryCount - 1
	}
	from := max(after+1, rs.FirstIndex)
	if rs.EntryCount == 0 || from > t.Last {
		return t, nil
	}
	t.Entries, _, err = db.IterateEntries(nil, 0, shard, replica, from, t.Last+1, maxBytes)
	if err != nil {
		return Tail{}, fmt.Errorf("raftlog: entries of replica %d: %w", replica, err)
	}
	if n := len(t.Entries); n == 0 || t.Entries[n-1].Index < t.Last {
		t.Complete = false
	}
	return t, nil
}

// Payload is the command an entry carries for the state machine, and
// whether it carries one (config changes and empty entries do not).
//
// Why by hand: dragonboat (request.go) proposes every non-empty command as
// an EncodedEntry, its payload behind a one-byte header (internal/rsm/
// encoded.go: version in the high nibble, compression in bits 1–3, a
// session flag in bit 0); we propose uncompressed, without sessions, and
// refuse anything else rather than guess.
func Payload(e pb.Entry) ([]byte, bool, error) {
	switch e.Type {
	case pb.ApplicationEntry:
		return e.Cmd, len(e.Cmd) > 0, nil
	case pb.EncodedEntry:
		if len(e.Cmd) == 0 {
			return nil, false, fmt.Errorf("raftlog: entry %d: an encoded entry without a header", e.Index)
		}
		if h := e.Cmd[0]; h != 0 {
			return nil, false, fmt.Errorf("raftlog: entry %d: encoded with header %#x (version, compression or session this node never writes)", e.Index, h)
		}
		return e.Cmd[1:], len(e.Cmd) > 1, nil
	default:
		return nil, false, nil // config changes, metadata
	}
}
