package cluster

import (
	"context"
	"sync"

	"github.com/lni/dragonboat/v4"
)

// memberships remembers the membership of each group this node leads, keyed
// by the config change index its replica applied last.
//
// Why: every status report (one a second for the controller leader) names
// the voters and learners of the groups the node leads. Asking dragonboat
// for them is a linearizable read — a ReadIndex round with every follower —
// which at 256 led groups was 256 heartbeat rounds a second of otherwise idle
// groups, and it counted as activity, so no group could ever quiesce. A
// membership changes only by a config change entry, which moves the applied
// config change index (GetNodeHostInfo reads it locally), so a membership
// read at one index stays true while the index stays.
//
// Concurrency: safe for concurrent use (status reports run while the node
// forgets groups it stopped).
type memberships struct {
	mu      sync.Mutex
	byShard map[uint64]cachedMembership
}

type cachedMembership struct {
	configChangeIndex uint64
	m                 *dragonboat.Membership
}

// get returns shard's membership as of configChangeIndex, reading it
// through read (linearizable) only when the index moved since the last read.
func (c *memberships) get(ctx context.Context, shard, configChangeIndex uint64,
	read func(context.Context, uint64) (*dragonboat.Membership, error)) (*dragonboat.Membership, error) {
	c.mu.Lock()
	cached, ok := c.byShard[shard]
	c.mu.Unlock()
	if ok && configChangeIndex != 0 && cached.configChangeIndex == configChangeIndex {
		return cached.m, nil
	}
	m, err := read(ctx, shard)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.byShard == nil {
		c.byShard = map[uint64]cachedMembership{}
	}
	// The read is at least as new as the index asked for; key it by its own
	// id so that a read racing a config change is not kept under the old one.
	c.byShard[shard] = cachedMembership{configChangeIndex: m.ConfigChangeID, m: m}
	c.mu.Unlock()
	return m, nil
}

// retain forgets every shard not in keep (groups the node no longer holds).
func (c *memberships) retain(keep map[uint64]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for shard := range c.byShard {
		if !keep[shard] {
			delete(c.byShard, shard)
		}
	}
}
