package sim

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/slotmeta/slotmeta/internal/engine/controller"
	"github.com/slotmeta/slotmeta/internal/slotstore"
)

// timer is an action an event left for later (the next join of a spread
// join, a node's return, the next restart of a rolling restart).
type timer struct {
	at time.Duration
	do func() error
}

// later schedules do at the simulated time at.
func (r *Run) later(at time.Duration, do func() error) {
	r.timers = append(r.timers, timer{at, do})
	slices.SortStableFunc(r.timers, func(a, b timer) int { return int(a.at - b.at) })
}

// runTimers runs the timers due by elapsed.
func (r *Run) runTimers(elapsed time.Duration) error {
	for len(r.timers) > 0 && r.timers[0].at <= elapsed {
		t := r.timers[0]
		r.timers = r.timers[1:]
		if err := t.do(); err != nil {
			return err
		}
	}
	return nil
}

// apply carries out one scenario event at its time.
func (r *Run) apply(ev Event) error {
	at := ev.At
	switch ev.Kind {
	case "join":
		n := r.count(ev)
		for i := range n {
			r.later(at+time.Duration(i)*ev.Every, r.join)
		}
	case "kill":
		for _, id := range r.pick(r.count(ev)) {
			r.setUp(id, false)
			r.killed = append(r.killed, id)
		}
	case "down":
		ids := r.pick(r.count(ev))
		for _, id := range ids {
			r.setUp(id, false)
		}
		r.later(at+ev.For, func() error {
			for _, id := range ids {
				r.setUp(id, true)
			}
			return nil
		})
	case "restart":
		r.w.mu.Lock()
		ids := slices.Sorted(maps.Keys(r.w.nodes))
		r.w.mu.Unlock()
		for i, id := range ids {
			r.later(at+time.Duration(i)*ev.Every, func() error { r.setUp(id, false); return nil })
			r.later(at+time.Duration(i)*ev.Every+ev.For, func() error { r.setUp(id, true); return nil })
		}
	case "drain":
		ids := r.killed
		if ev.Ref != "killed" {
			ids = r.pick(r.count(ev))
		}
		for _, id := range ids {
			if _, err := r.propose(controller.Command{DrainNode: &controller.DrainNode{ID: id}}); err != nil {
				return fmt.Errorf("drain node %d: %w", id, err)
			}
			r.drained = append(r.drained, id)
		}
	case "hot-slot":
		r.w.mu.Lock()
		total := 0.0
		for _, v := range r.w.slotRate {
			total += v
		}
		hot := total * ev.Pct / 100
		rest := (total - hot) / (slotstore.HashSlotCount - 1)
		for hs := range r.w.slotRate {
			r.w.slotRate[hs] = rest
		}
		r.w.slotRate[ev.N] = hot
		r.w.mu.Unlock()
		r.hotSlot, r.hot = slotstore.HashSlot(ev.N), true
	case "load":
		r.w.mu.Lock()
		total := 0.0
		for _, v := range r.w.slotRate {
			total += v
		}
		for hs := range r.w.slotRate {
			if total > 0 {
				r.w.slotRate[hs] *= ev.Rate / total
			} else {
				r.w.slotRate[hs] = ev.Rate / slotstore.HashSlotCount
			}
		}
		r.w.mu.Unlock()
	}
	return nil
}

// count is an event's node count: N, or P% of the registered nodes.
func (r *Run) count(ev Event) int {
	if ev.Pct == 0 {
		return ev.N
	}
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	return int(math.Round(float64(len(r.w.nodes)) * ev.Pct / 100))
}

// pick chooses n nodes for a fault or a drain: the highest ids that are up
// (a rack is a block of ids; the founding nodes, which hold the
// controller, go last).
func (r *Run) pick(n int) []slotstore.NodeID {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	ids := slices.Sorted(maps.Keys(r.w.nodes))
	var out []slotstore.NodeID
	for i := len(ids) - 1; i >= 0 && len(out) < n; i-- {
		if r.w.nodes[ids[i]].up {
			out = append(out, ids[i])
		}
	}
	return out
}

// setUp takes a node down (its replicas stop answering; their data stays)
// or brings it back.
func (r *Run) setUp(id slotstore.NodeID, up bool) {
	r.w.mu.Lock()
	defer r.w.mu.Unlock()
	n := r.w.nodes[id]
	if n == nil || n.up == up {
		return
	}
	n.up = up
	if up {
		n.downSince = time.Time{}
	} else {
		n.downSince = r.w.now
	}
}

// join adds a node, registered and made active as a joining node does
// (cluster/join.go).
func (r *Run) join() error {
	r.w.mu.Lock()
	id := slotstore.NodeID(len(r.w.nodes) + 1)
	for r.w.nodes[id] != nil {
		id++
	}
	r.w.addNode(id)
	r.w.mu.Unlock()
	node := controller.Node{ID: id, RaftAddr: addrOf(id), PeerAddr: addrOf(id)}
	if _, err := r.propose(controller.Command{RegisterNode: &controller.RegisterNode{Node: node}}); err != nil {
		return fmt.Errorf("register node %d: %w", id, err)
	}
	if _, err := r.propose(controller.Command{SetNodeState: &controller.SetNodeState{ID: id, State: controller.NodeActive}}); err != nil {
		return fmt.Errorf("activate node %d: %w", id, err)
	}
	return nil
}
