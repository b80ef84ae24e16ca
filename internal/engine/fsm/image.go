package fsm

import (
	"encoding/binary"
	"fmt"
	"io"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// Images for backups (issue 29): the group's state as one snapshot of the
// store holds it, in the image format a Raft snapshot carries (so that
// RecoverFromSnapshot reads it back), with what it was cut at.

// ImageInfo is what an image was cut at: the group's applied index, the
// hash slots it owned (a fenced one included: it is the group's until its
// release), and each owned slot's change-log position (its last numbered
// change).
type ImageInfo struct {
	Group        slotstore.GroupID             `json:"group"`
	AppliedIndex uint64                        `json:"applied_index"`
	Owned        []slotstore.HashSlot          `json:"owned"`
	Positions    map[slotstore.HashSlot]uint64 `json:"positions"`
}

// WriteImage writes the group's image as of one snapshot of the store and
// returns what it was cut at. It may run beside Update: an Update commits
// its rows and the applied index in one batch, so any snapshot holds a
// state the group had. done stops it (sm.ErrSnapshotStopped).
func (s *StateMachine) WriteImage(w io.Writer, done <-chan struct{}) (ImageInfo, error) {
	snap := s.db.NewSnapshot()
	defer snap.Close()
	g := s.cfg.Group
	info := ImageInfo{Group: g, Positions: map[slotstore.HashSlot]uint64{}}
	raw, found, err := store.Get(snap, meta.SysKey(g, meta.SysApplied))
	if err != nil {
		return info, err
	}
	if found {
		if len(raw) != 8 {
			return info, fmt.Errorf("fsm: group %d: applied-index record of %d bytes", g, len(raw))
		}
		info.AppliedIndex = binary.BigEndian.Uint64(raw)
	}
	raw, _, err = store.Get(snap, meta.SysKey(g, meta.SysOwned))
	if err != nil {
		return info, err
	}
	owned, ok := meta.DecodeSlotSet(raw)
	if !ok {
		return info, fmt.Errorf("fsm: group %d: corrupt owned-slot record", g)
	}
	info.Owned = owned.Slots()
	for _, hs := range info.Owned {
		h, err := s.readHead(snap, hs)
		if err != nil {
			return info, err
		}
		info.Positions[hs] = h.Last
	}
	return info, s.writeImage(snap, w, done)
}
