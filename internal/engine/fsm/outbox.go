package fsm

import (
	"encoding/binary"

	"github.com/cockroachdb/pebble/v2"

	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// projectMembership applies one projected subscriber change to a user's
// membership, fenced by the channel's subscriber version: a row that already
// carries this version or a newer one is left alone, so a projection
// repeated after a crash (or overtaken by a newer one) changes nothing.
// Joining creates or revives the membership; leaving tombstones it (the row
// stays, with its version, to fence older joins).
func (a membershipApplier) projectMembership(c *meta.ProjectMembership) meta.Result {
	if p := userChannelProblem(&c.UserChannel); p != "" {
		return invalidResult("%s", p)
	}
	key := a.membershipKey(c.HashSlot, &c.UserChannel)
	old, found := readRow(a.applier, key, meta.DecodeMembership)
	if found && old.ProjectedVersion >= c.Version {
		return meta.Result{Revision: old.Revision, Message: "already projected"}
	}
	m := &meta.Membership{UID: c.UID, ChannelType: c.ChannelType, ChannelID: c.ChannelID,
		ActivatedAtMs: max(c.TimeMs, 0), CreatedAtMs: c.TimeMs}
	if found {
		copied := *old
		m = &copied
	}
	m.ProjectedVersion = c.Version
	m.Tombstone = !c.Add
	m.UpdatedAtMs = c.TimeMs
	var prev *meta.Membership
	if found {
		prev = old
	}
	return a.writeMembership(c.HashSlot, key, prev, m)
}

// ackOutbox deletes a projected record and lowers the channel's pending
// count; a record already gone is acknowledged already.
func (a channelApplier) ackOutbox(c *meta.AckOutbox) meta.Result {
	g := a.sm.cfg.Group
	okey := meta.OutboxKey(g, c.HashSlot, c.Seq)
	if _, found := a.get(okey); !found {
		return meta.Result{Revision: a.revision, Message: "already acknowledged"}
	}
	a.del(okey)
	key := a.channelKey(c.HashSlot, c.ChannelType, c.ChannelID)
	ch, found := readRow(a.applier, key, meta.DecodeChannel)
	if !found { // the channel was deleted meanwhile: nothing to count down
		return meta.Result{Revision: a.revision}
	}
	if ch.PendingProjection > 0 {
		ch.PendingProjection--
	}
	return a.writeChannel(key, ch)
}

// scanOutbox lists pending projection records of owned slots, oldest first.
func (s reader) scanOutbox(q *meta.ScanOutbox) (*meta.OutboxPage, error) {
	limit := q.Limit
	if limit <= 0 || limit > 1000 {
		limit = 1000
	}
	page := &meta.OutboxPage{}
	for hs := q.FromSlot; hs <= q.ToSlot && hs.Valid() && len(page.Entries) < limit; hs++ {
		if !s.owned.Load().Has(hs) {
			continue
		}
		prefix := meta.TablePrefix(s.cfg.Group, hs, meta.TableOutbox)
		it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: prefix, UpperBound: meta.PrefixEnd(prefix)})
		if err != nil {
			return nil, err
		}
		for it.First(); it.Valid() && len(page.Entries) < limit; it.Next() {
			k := it.Key()[len(prefix):]
			if len(k) != 8 {
				continue
			}
			rec, err := meta.DecodeOutboxRecord(it.Value())
			if err != nil {
				_ = it.Close()
				return nil, err
			}
			page.Entries = append(page.Entries, meta.OutboxEntry{HashSlot: hs, Seq: binary.BigEndian.Uint64(k), Record: rec})
		}
		if err := it.Close(); err != nil {
			return nil, err
		}
	}
	return page, nil
}
