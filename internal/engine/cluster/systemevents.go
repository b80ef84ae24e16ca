package cluster

import (
	"sync"
	"sync/atomic"

	"github.com/lni/dragonboat/v4/raftio"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
)

// SnapshotStats counts the Raft snapshots of slot groups (the controller's
// shard left out) that moved between this node and others since the node
// started, as dragonboat's system events report them. A replica that fell
// behind the leader's compacted log catches up by receiving one and
// recovering its state machine from it.
type SnapshotStats struct {
	// Received: snapshot streams a replica on this node received whole
	// from a leader (dragonboat's SnapshotReceived).
	Received uint64
	// Recovered: state-machine recoveries from a non-empty snapshot, the
	// received ones and those at a restart (SnapshotRecovered).
	Recovered uint64
	// Sent and SendAborted: snapshot streams this node sent to a follower
	// completely, and the ones that broke off.
	Sent, SendAborted uint64
}

// snapshotStats reports this node's snapshot counters.
func (n *Node) snapshotStats() SnapshotStats {
	e := &n.events
	return SnapshotStats{Received: e.received.Load(), Recovered: e.recovered.Load(),
		Sent: e.sent.Load(), SendAborted: e.aborted.Load()}
}

// systemEvents is the node's dragonboat system event listener. dragonboat
// calls it from one goroutine of its own; it only counts — the snapshots,
// and the Raft connections to each address as this node sees them: whether
// the last attempt connected, and the failures (a peer's reachability from
// here, exported by every node: slotmeta_raft_peer_connected).
type systemEvents struct {
	received, recovered, sent, aborted atomic.Uint64
	conns                              sync.Map // Raft address → *connState
	snapIndex                          sync.Map // shard → *atomic.Uint64: its newest snapshot's index
}

// snapshotSeen keeps the newest snapshot index of a shard.
func (e *systemEvents) snapshotSeen(i raftio.SnapshotInfo) {
	v, _ := e.snapIndex.LoadOrStore(i.ShardID, new(atomic.Uint64))
	idx := v.(*atomic.Uint64)
	for {
		old := idx.Load()
		if i.Index <= old || idx.CompareAndSwap(old, i.Index) {
			return
		}
	}
}

// snapshotIndex is the newest snapshot index seen of shard (false: none).
func (e *systemEvents) snapshotIndex(shard uint64) (uint64, bool) {
	v, ok := e.snapIndex.Load(shard)
	if !ok {
		return 0, false
	}
	return v.(*atomic.Uint64).Load(), true
}

func (e *systemEvents) SnapshotCreated(i raftio.SnapshotInfo) { e.snapshotSeen(i) }

// connState is one address's Raft connections: the last attempt's outcome
// and the failures so far.
type connState struct {
	up       atomic.Bool
	failures atomic.Uint64
}

func (e *systemEvents) conn(addr string) *connState {
	c, _ := e.conns.LoadOrStore(addr, &connState{})
	return c.(*connState)
}

// connection reports the last outcome and failures of the connections to
// addr (known: an attempt was made).
func (e *systemEvents) connection(addr string) (up bool, failures uint64, known bool) {
	c, ok := e.conns.Load(addr)
	if !ok {
		return false, 0, false
	}
	cs := c.(*connState)
	return cs.up.Load(), cs.failures.Load(), true
}

// ConnectionEstablished and ConnectionFailed: the message connections only
// (a snapshot's is short-lived and says nothing more).
func (e *systemEvents) ConnectionEstablished(i raftio.ConnectionInfo) {
	if !i.SnapshotConnection {
		e.conn(i.Address).up.Store(true)
	}
}

func (e *systemEvents) ConnectionFailed(i raftio.ConnectionInfo) {
	if !i.SnapshotConnection {
		c := e.conn(i.Address)
		c.up.Store(false)
		c.failures.Add(1)
	}
}

var _ raftio.ISystemEventListener = (*systemEvents)(nil)

func slotShard(shard uint64) bool { return shard != controller.ShardID }

func (e *systemEvents) SnapshotReceived(i raftio.SnapshotInfo) {
	e.snapshotSeen(i)
	if slotShard(i.ShardID) {
		e.received.Add(1)
	}
}

func (e *systemEvents) SnapshotRecovered(i raftio.SnapshotInfo) {
	e.snapshotSeen(i)
	if slotShard(i.ShardID) && i.Index > 0 {
		e.recovered.Add(1)
	}
}

func (e *systemEvents) SendSnapshotCompleted(i raftio.SnapshotInfo) {
	if slotShard(i.ShardID) {
		e.sent.Add(1)
	}
}

func (e *systemEvents) SendSnapshotAborted(i raftio.SnapshotInfo) {
	if slotShard(i.ShardID) {
		e.aborted.Add(1)
	}
}

func (*systemEvents) NodeHostShuttingDown()                   {}
func (*systemEvents) NodeUnloaded(raftio.NodeInfo)            {}
func (*systemEvents) NodeDeleted(raftio.NodeInfo)             {}
func (*systemEvents) NodeReady(raftio.NodeInfo)               {}
func (*systemEvents) MembershipChanged(raftio.NodeInfo)       {}
func (*systemEvents) SendSnapshotStarted(raftio.SnapshotInfo) {}
func (*systemEvents) SnapshotCompacted(raftio.SnapshotInfo)   {}
func (*systemEvents) LogCompacted(raftio.EntryInfo)           {}
func (*systemEvents) LogDBCompacted(raftio.EntryInfo)         {}
