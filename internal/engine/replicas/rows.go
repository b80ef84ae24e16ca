package replicas

import (
	"github.com/slotmeta/slotmeta/internal/engine/fsm"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// GetRows answers qs[i] from this node's replica of groups[i], every part
// from one snapshot of the node's store (fsm.GetRowsTogether), read
// straight from the state machines as their Lookup would (which reads only
// the store and atomics, concurrently with Update). out[i] is nil for a
// part whose replica is not open here, or stopped while the snapshot was
// taken: Stop unpublishes a replica before it deletes its group's rows, so
// one still published after the snapshot had all of them in it.
func (s *Set) GetRows(groups []slotstore.GroupID, qs []*meta.GetRows) ([]*meta.RowBatch, error) {
	out := make([]*meta.RowBatch, len(qs))
	reps := make([]*Replica, len(qs))
	parts := make([]fsm.RowsPart, 0, len(qs))
	idx := make([]int, 0, len(qs))
	for i, g := range groups {
		r := s.Get(g)
		if !r.Open() {
			continue
		}
		m := r.SM()
		reps[i] = r
		parts, idx = append(parts, fsm.RowsPart{SM: m, Q: qs[i]}), append(idx, i)
	}
	batches, err := fsm.GetRowsTogether(parts)
	if err != nil {
		return nil, err
	}
	for j, i := range idx {
		if s.Get(groups[i]) == reps[i] {
			out[i] = batches[j]
		}
	}
	return out, nil
}
