package replicas

import (
	"sync"
	"time"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// disruptions remembers, per local replica, the last time something went
// wrong with it as this node saw it. The controller's leader-transfer gates
// hold a replica that was disrupted recently back from leadership (the
// hold-down): a node that was cut off, crashed or lost its leader tends to
// do it again, and handing it leadership would turn one outage into two.
//
// It is fed by the node itself: replica starts, dragonboat's leader events
// (LeaderUpdated runs on dragonboat's event goroutine, so every method only
// takes a short mutex) and the transfers this node asks for. A leadership
// loss is voluntary when this node asked to transfer leadership away within
// awayGrace before it; a spell without a leader counts once it outlasts
// settle (an election normally ends well within it). Times come from the
// monotonic clock: reports carry ages, never instants, so the controller's
// clock does not have to agree with this node's.
type disruptions struct {
	now       func() time.Duration // monotonic, since an arbitrary base
	settle    time.Duration
	awayGrace time.Duration

	mu sync.Mutex
	m  map[uint64]*replicaTrack // by shard
}

type replicaTrack struct {
	replica         uint64
	leading         bool
	sawLeader       bool                 // a leader was known since the start
	leaderlessSince time.Duration        // -1: a leader is known
	transferAt      time.Duration        // last transfer away asked (-1: none)
	at              time.Duration        // when the last disruption ended
	kind            slotstore.Disruption // "": none yet
}

func newDisruptions(settle, awayGrace time.Duration) *disruptions {
	base := time.Now()
	return &disruptions{now: func() time.Duration { return time.Since(base) }, settle: settle, awayGrace: awayGrace,
		m: map[uint64]*replicaTrack{}}
}

// started registers a replica that starts now; restarted says it resumed
// from Raft state it had before (a process restart, or a stop and start).
func (d *disruptions) started(shard, replica uint64, restarted bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	now := d.now()
	t := &replicaTrack{replica: replica, leaderlessSince: now, transferAt: -1}
	if restarted {
		t.at, t.kind = now, slotstore.DisruptionRestarted
	}
	d.m[shard] = t
}

// forget drops a replica that stopped here.
func (d *disruptions) forget(shard uint64) {
	d.mu.Lock()
	delete(d.m, shard)
	d.mu.Unlock()
}

// transferAway notes that this node asked shard's Raft to hand leadership
// to another replica.
func (d *disruptions) transferAway(shard uint64) {
	d.mu.Lock()
	if t := d.m[shard]; t != nil {
		t.transferAt = d.now()
	}
	d.mu.Unlock()
}

// leaderUpdated follows one leader event of shard (leader 0: none known).
func (d *disruptions) leaderUpdated(shard, leader uint64) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.m[shard]
	if t == nil {
		return
	}
	now := d.now()
	if t.leading && leader != t.replica && (t.transferAt < 0 || now-t.transferAt > d.awayGrace) {
		t.at, t.kind = now, slotstore.DisruptionLostLeadership
	}
	t.leading = leader == t.replica && leader != 0
	switch {
	case leader == 0 && t.leaderlessSince < 0:
		t.leaderlessSince = now
	case leader != 0 && t.leaderlessSince >= 0:
		// The first election after a start is not a disruption (a restart
		// is recorded as one of its own).
		if t.sawLeader && now-t.leaderlessSince > d.settle {
			t.at, t.kind = now, slotstore.DisruptionNoLeader
		}
		t.leaderlessSince = -1
	}
	if leader != 0 {
		t.sawLeader = true
	}
}

// last returns the replica's last disruption and how long ago it ended (a
// spell without a leader that lasts now ends now); kind "" when none.
func (d *disruptions) last(shard uint64) (kind slotstore.Disruption, ago time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := d.m[shard]
	if t == nil {
		return "", 0
	}
	now := d.now()
	if t.sawLeader && t.leaderlessSince >= 0 && now-t.leaderlessSince > d.settle {
		return slotstore.DisruptionNoLeader, 0
	}
	if t.kind == "" {
		return "", 0
	}
	return t.kind, now - t.at
}
