package routing

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// GroupState is the live view of one group: its intent (ConfigEpoch) and the
// leader this node last observed. Leader 0 means no live leader is known.
type GroupState struct {
	Leader      slotstore.NodeID
	Term        uint64
	ConfigEpoch uint64
}

// Snapshot is an immutable routing view: one table plus the live state of its
// groups. Every Resolve on one Snapshot answers under the same revision.
type Snapshot struct {
	table  *Table
	groups map[slotstore.GroupID]GroupState
}

// Table returns the snapshot's HashToGroup table, or nil before the first one arrived.
func (s *Snapshot) Table() *Table { return s.table }

// Revision is the RouteRevision of the snapshot's table (0 when there is none).
func (s *Snapshot) Revision() uint64 {
	if s.table == nil {
		return 0
	}
	return s.table.revision
}

// Group returns the live state of g and whether the snapshot knows g.
func (s *Snapshot) Group(g slotstore.GroupID) (GroupState, bool) {
	st, ok := s.groups[g]
	return st, ok
}

// LedBy lists the groups whose known leader is node, in no order.
func (s *Snapshot) LedBy(node slotstore.NodeID) []slotstore.GroupID {
	var out []slotstore.GroupID
	for g, st := range s.groups {
		if st.Leader == node && node != 0 {
			out = append(out, g)
		}
	}
	return out
}

// ResolveSlot returns the route of one hash slot.
func (s *Snapshot) ResolveSlot(hs slotstore.HashSlot) (slotstore.Route, error) {
	if s.table == nil {
		return slotstore.Route{}, slotstore.Errorf(slotstore.CodeRouteNotReady, "no routing table yet")
	}
	if !hs.Valid() {
		return slotstore.Route{}, slotstore.Errorf(slotstore.CodeInvalidArgument, "hash slot %d out of range", hs)
	}
	g := s.table.groups[hs]
	st, ok := s.groups[g]
	if !ok {
		return slotstore.Route{HashSlot: hs, GroupID: g, RouteRevision: s.table.revision},
			slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d of hash slot %d is unknown", g, hs)
	}
	r := slotstore.Route{
		HashSlot:      hs,
		GroupID:       g,
		LeaderNodeID:  st.Leader,
		LeaderTerm:    st.Term,
		ConfigEpoch:   st.ConfigEpoch,
		RouteRevision: s.table.revision,
	}
	if st.Leader == 0 {
		return r, slotstore.Errorf(slotstore.CodeRouteNotReady, "group %d has no live leader", g)
	}
	return r, nil
}

// Resolve returns the route of a route key.
func (s *Snapshot) Resolve(key []byte) (slotstore.Route, error) {
	return s.ResolveSlot(slotstore.HashSlotOf(key))
}

// ResolveBatch resolves every key under this snapshot's single revision,
// appending to dst. It stops at the first key that cannot be routed and
// returns its error; the routes appended so far stay in the result.
func (s *Snapshot) ResolveBatch(keys [][]byte, dst []slotstore.Route) ([]slotstore.Route, error) {
	for _, k := range keys {
		r, err := s.Resolve(k)
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
	}
	return dst, nil
}

// Ready reports whether every group of the table has a live leader, and if
// not, the first group that lacks one.
func (s *Snapshot) Ready() (bool, slotstore.GroupID) {
	if s.table == nil {
		return false, 0
	}
	for _, g := range s.table.GroupIDs() {
		if st, ok := s.groups[g]; !ok || st.Leader == 0 {
			return false, g
		}
	}
	return true, 0
}

// Router publishes the node's current Snapshot.
//
// It also tells waiters when a group's leader changes: LeaderChange hands
// out a context that is cancelled, after the new snapshot is published, at
// the next change of the group's leader or term (or when the router forgets
// the group). Take it before reading the snapshot: a change after the read
// then always cancels it.
type Router struct {
	mu      sync.Mutex // serialises writers and guards changes; readers never take it
	cur     atomic.Pointer[Snapshot]
	changes map[slotstore.GroupID]change
	next    chan struct{} // closed when the next snapshot is published (Changed)
}

type change struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// NewRouter returns a router whose snapshot has no table yet: every resolve
// answers route_not_ready until SetTable.
func NewRouter() *Router {
	r := &Router{changes: map[slotstore.GroupID]change{}, next: make(chan struct{})}
	r.cur.Store(&Snapshot{groups: map[slotstore.GroupID]GroupState{}})
	return r
}

// Load returns the current snapshot.
func (r *Router) Load() *Snapshot { return r.cur.Load() }

// update publishes a new snapshot built from a copy of the current one,
// unless unchanged reports (on the current one, before anything is copied)
// that fn would change nothing: the leader refresh of every group every
// reconcile round then costs a map lookup per group, not a copy of the whole
// map per group.
func (r *Router) update(unchanged func(cur *Snapshot) bool, fn func(table **Table, groups map[slotstore.GroupID]GroupState)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	old := r.cur.Load()
	if unchanged != nil && unchanged(old) {
		return
	}
	groups := make(map[slotstore.GroupID]GroupState, len(old.groups))
	for g, st := range old.groups {
		groups[g] = st
	}
	table := old.table
	fn(&table, groups)
	r.cur.Store(&Snapshot{table: table, groups: groups})
	close(r.next)
	r.next = make(chan struct{})
}

// Changed returns a channel closed once a snapshot newer than the one Load
// returns after this call is published (the route stream of GET /v1/watch
// waits on it). Take it before loading: a change after the load then
// always closes it.
func (r *Router) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.next
}

// SetTable publishes t unless the router already holds a newer revision.
func (r *Router) SetTable(t *Table) {
	if t == nil {
		return
	}
	r.update(func(cur *Snapshot) bool { return cur.table == t || cur.table != nil && t.revision < cur.table.revision },
		func(table **Table, _ map[slotstore.GroupID]GroupState) {
			if *table == nil || t.revision >= (*table).revision {
				*table = t
			}
		})
}

// SetConfigEpoch records the committed config epoch of g (creating g's
// entry). Epochs only grow: an older one arriving late is ignored.
func (r *Router) SetConfigEpoch(g slotstore.GroupID, epoch uint64) {
	r.update(func(cur *Snapshot) bool {
		st, ok := cur.groups[g]
		return ok && epoch <= st.ConfigEpoch
	}, func(_ **Table, groups map[slotstore.GroupID]GroupState) {
		st, ok := groups[g]
		if ok && epoch < st.ConfigEpoch {
			return
		}
		st.ConfigEpoch = epoch
		groups[g] = st
	})
}

// SetLeader records the live leader of g as observed at term. An observation
// of an older term than the one held is ignored; leader 0 (no leader) at the
// same or a newer term clears it.
func (r *Router) SetLeader(g slotstore.GroupID, leader slotstore.NodeID, term uint64) {
	changed := false
	r.update(func(cur *Snapshot) bool {
		st, ok := cur.groups[g]
		return ok && (term < st.Term || st.Leader == leader && st.Term == term)
	}, func(_ **Table, groups map[slotstore.GroupID]GroupState) {
		st := groups[g]
		if term < st.Term {
			return
		}
		changed = st.Leader != leader || st.Term != term
		st.Leader, st.Term = leader, term
		groups[g] = st
	})
	if changed {
		r.signal(g)
	}
}

// ForgetGroup drops g's live state (the node stopped following it).
func (r *Router) ForgetGroup(g slotstore.GroupID) {
	r.update(nil, func(_ **Table, groups map[slotstore.GroupID]GroupState) { delete(groups, g) })
	r.signal(g)
}

// LeaderChange returns a context cancelled at the next change of g's
// leader or term. Every caller until that change shares one context; it
// holds no goroutine.
func (r *Router) LeaderChange(g slotstore.GroupID) context.Context {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.changes[g]
	if !ok {
		c.ctx, c.cancel = context.WithCancel(context.Background())
		r.changes[g] = c
	}
	return c.ctx
}

// signal cancels g's change context (the new snapshot is already published).
func (r *Router) signal(g slotstore.GroupID) {
	r.mu.Lock()
	c, ok := r.changes[g]
	delete(r.changes, g)
	r.mu.Unlock()
	if ok {
		c.cancel()
	}
}
