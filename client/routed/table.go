package routed

import (
	"hash/crc32"
	"maps"
	"net/url"
	"sync"
	"sync/atomic"

	"github.com/slotmeta/slotmeta/client"
)

// slotCount is the number of hash slots: a route key's slot is
// CRC32-IEEE(key) mod 256, as the server computes it
// (slotstore.HashSlotOf; TestSlotOfMatchesTheServer holds the two together).
const slotCount = 256

// slotOf is the hash slot of a route key.
func slotOf(key string) int { return int(crc32.ChecksumIEEE([]byte(key)) % slotCount) }

// leader is a group's leader as last learnt, with the term it leads in: a
// newer observation replaces an older one only with a term at least as high,
// so a late answer from before an election does not undo what a newer one
// taught.
type leader struct {
	node uint64
	term uint64
}

// table is one immutable view of the cluster: which group serves each hash
// slot (0: unknown), under which route revision, who leads each group and
// where each node's API is. It is replaced whole (copy on write) and read
// without a lock.
type table struct {
	revision uint64
	groups   [slotCount]uint32
	leaders  map[uint32]leader
	nodes    map[uint64]*url.URL
}

// leaderOf is the node that leads slot's group, if known.
func (t *table) leaderOf(slot int) (node uint64, group uint32) {
	group = t.groups[slot]
	if group == 0 {
		return 0, 0
	}
	return t.leaders[group].node, group
}

// view holds the current table and serializes its updates.
type view struct {
	cur atomic.Pointer[table]
	mu  sync.Mutex // held while a new table is built from the current one
}

func newView() *view {
	v := &view{}
	v.cur.Store(&table{leaders: map[uint32]leader{}, nodes: map[uint64]*url.URL{}})
	return v
}

func (v *view) load() *table { return v.cur.Load() }

// update builds the next table from a copy of the current one; change
// reports whether it changed anything (nothing is stored otherwise).
func (v *view) update(change func(t *table) bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	old := v.cur.Load()
	next := &table{revision: old.revision, groups: old.groups, leaders: maps.Clone(old.leaders), nodes: old.nodes}
	if change(next) {
		v.cur.Store(next)
	}
}

// learnLeader records that group is led by node in term: a keyed answer's
// X-Leader-Node and X-Leader-Term, or (hint) a not_leader's leader_hint,
// which names a node without its term — it is believed, and keeps the term
// known so far, so the next answer with a real term still replaces it.
func (v *view) learnLeader(group uint32, node, term uint64, hint bool) {
	if group == 0 || node == 0 {
		return
	}
	stale := func(t *table) bool {
		l, ok := t.leaders[group]
		return ok && (l.node == node && (hint || l.term >= term) || !hint && l.term > term)
	}
	if stale(v.load()) {
		return
	}
	v.update(func(t *table) bool {
		if stale(t) {
			return false
		}
		if hint {
			term = t.leaders[group].term
		}
		t.leaders[group] = leader{node: node, term: term}
		return true
	})
}

// forgetLeader drops group's leader if it is still node: the next request
// goes anywhere (the server forwards) until a newer leader is learnt.
func (v *view) forgetLeader(group uint32, node uint64) {
	v.update(func(t *table) bool {
		if l, ok := t.leaders[group]; ok && l.node == node {
			delete(t.leaders, group)
			return true
		}
		return false
	})
}

// learnSlot records slot's group and leader under revision (a resolve's
// answer for one of its keys). It never takes a slot back to an older
// revision's group.
func (v *view) learnSlot(revision uint64, slot int, group uint32, l leader) {
	v.update(func(t *table) bool {
		if revision < t.revision || group == 0 {
			return false
		}
		changed := t.groups[slot] != group
		t.groups[slot] = group
		if l.node != 0 && newer(l, t.leaders[group]) && t.leaders[group] != l {
			t.leaders[group] = l
			changed = true
		}
		return changed
	})
}

// learnRoutes replaces the slots' groups and leaders with r's (a whole
// route table: GET /v1/cluster/routes or a routes event), unless the view
// is already at a newer revision. Leaders r does not know are kept when
// their group still serves a slot: r's "no live leader" is a moment, the
// server forwards meanwhile.
func (v *view) learnRoutes(r *client.Routes) {
	if r == nil || len(r.HashSlots) != slotCount || r.Revision <= 0 {
		return
	}
	v.update(func(t *table) bool {
		if uint64(r.Revision) < t.revision {
			return false
		}
		t.revision = uint64(r.Revision)
		for _, hs := range r.HashSlots {
			if hs.HashSlot < 0 || hs.HashSlot >= slotCount || hs.Group <= 0 {
				continue
			}
			g := uint32(hs.Group)
			t.groups[hs.HashSlot] = g
			if hs.LeaderNode != nil && *hs.LeaderNode > 0 {
				l := leader{node: uint64(*hs.LeaderNode)}
				if hs.LeaderTerm != nil {
					l.term = uint64(*hs.LeaderTerm)
				}
				if newer(l, t.leaders[g]) {
					t.leaders[g] = l
				}
			}
		}
		return true
	})
}

// learnNodes replaces the nodes' API addresses. Their scheme is the one
// the client was configured with (every node of a cluster serves the same).
func (v *view) learnNodes(nodes map[uint64]*url.URL) {
	v.update(func(t *table) bool {
		if maps.EqualFunc(t.nodes, nodes, func(a, b *url.URL) bool { return a.String() == b.String() }) {
			return false
		}
		t.nodes = nodes
		return true
	})
}

// newer reports whether observation l replaces the known leader k: a
// higher term, or the first term seen. Within one term Raft has one leader,
// so a table of the known term never undoes what a not_leader's hint (which
// keeps the known term) taught.
func newer(l, k leader) bool { return k.node == 0 || l.term > k.term }
