package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// membershipApplier applies the membership commands.
type membershipApplier struct{ *applier }

// invalidResult is the answer to a command no API would have built.
func invalidResult(format string, args ...any) meta.Result {
	return meta.Result{Code: slotstore.CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// unchangedResult answers a command that found nothing to change: the
// stored row and its revision.
func unchangedResult(rev uint64, raw []byte) meta.Result {
	return meta.Result{Revision: rev, Value: raw}
}

func (a membershipApplier) membershipKey(hs slotstore.HashSlot, u *meta.UserChannel) []byte {
	return meta.UserChannelKey(a.sm.cfg.Group, hs, meta.TableMembership, u.UID, u.ChannelType, u.ChannelID)
}

func activityKey(g slotstore.GroupID, hs slotstore.HashSlot, m *meta.Membership) []byte {
	return meta.MembershipActivityKey(g, hs, m.UID, m.ActivatedAtMs, m.ChannelType, m.ChannelID)
}

// writeMembership stores m (replacing old, which may be nil) and keeps the
// activity index in step: old's entry goes, m's comes unless m is a
// tombstone. The index entry holds the row itself, so one iterator lists
// a consistent view.
func (a membershipApplier) writeMembership(hs slotstore.HashSlot, key []byte, old, m *meta.Membership) meta.Result {
	g := a.sm.cfg.Group
	if old != nil && !old.Tombstone {
		a.del(activityKey(g, hs, old))
	}
	m.Revision = a.nextRevision()
	v := meta.EncodeMembership(m)
	a.set(key, v)
	if !m.Tombstone {
		a.set(activityKey(g, hs, m), v)
	}
	return meta.Result{Revision: m.Revision, Value: v}
}

func (a membershipApplier) putMembership(c *meta.PutMembership) meta.Result {
	if p := userChannelProblem(&c.UserChannel); p != "" {
		return invalidResult("%s", p)
	}
	if c.HasActivatedAt && c.ActivatedAtMs < 0 {
		return invalidResult("activated_at_ms must not be negative")
	}
	key := a.membershipKey(c.HashSlot, &c.UserChannel)
	old, found := readRow(a.applier, key, meta.DecodeMembership)
	m := &meta.Membership{
		UID: c.UID, ChannelType: c.ChannelType, ChannelID: c.ChannelID,
		JoinSeq: c.JoinSeq, ReadSeq: c.ReadSeq, DeletedToSeq: c.DeletedToSeq, Tombstone: c.Tombstone,
		ActivatedAtMs: max(c.TimeMs, 0), CreatedAtMs: c.TimeMs, UpdatedAtMs: c.TimeMs,
	}
	if found {
		m.ProjectedVersion = old.ProjectedVersion
		m.CreatedAtMs = old.CreatedAtMs
		m.ActivatedAtMs = old.ActivatedAtMs
		m.ReadSeq = max(m.ReadSeq, old.ReadSeq)
		m.DeletedToSeq = max(m.DeletedToSeq, old.DeletedToSeq)
	}
	if c.HasActivatedAt {
		m.ActivatedAtMs = c.ActivatedAtMs
	}
	return a.writeMembership(c.HashSlot, key, old, m)
}

// existingMembership reads the membership a command names, or answers why not.
func (a membershipApplier) existingMembership(hs slotstore.HashSlot, u *meta.UserChannel) (*meta.Membership, []byte, []byte, *meta.Result) {
	return existingUserChannel(a.applier, hs, meta.TableMembership, u, meta.DecodeMembership, "membership of")
}

func (a membershipApplier) deleteMembership(c *meta.DeleteMembership) meta.Result {
	m, _, key, res := a.existingMembership(c.HashSlot, &c.UserChannel)
	if res != nil {
		return *res
	}
	a.del(key)
	if !m.Tombstone {
		a.del(activityKey(a.sm.cfg.Group, c.HashSlot, m))
	}
	return meta.Result{Revision: a.nextRevision()}
}

// readMembershipTo applies meta.ReadMembership: the badge floor only rises.
func (a membershipApplier) readMembershipTo(c *meta.ReadMembership) meta.Result {
	return a.raiseSeq(&c.Header, &c.UserChannel, c.ReadSeq, func(m *meta.Membership) *uint64 { return &m.ReadSeq })
}

// hideMembership applies meta.HideMembership: the hidden-through seq only rises.
func (a membershipApplier) hideMembership(c *meta.HideMembership) meta.Result {
	return a.raiseSeq(&c.Header, &c.UserChannel, c.ToSeq, func(m *meta.Membership) *uint64 { return &m.DeletedToSeq })
}

// raiseSeq raises one of a membership's seqs (field picks it) to seq; a
// seq at or below the stored one changes nothing.
func (a membershipApplier) raiseSeq(h *meta.Header, u *meta.UserChannel, seq uint64, field func(*meta.Membership) *uint64) meta.Result {
	m, raw, key, res := a.existingMembership(h.HashSlot, u)
	if res != nil {
		return *res
	}
	if seq <= *field(m) {
		return unchangedResult(m.Revision, raw)
	}
	old := *m
	*field(m), m.UpdatedAtMs = seq, h.TimeMs
	return a.writeMembership(h.HashSlot, key, &old, m)
}

func (a membershipApplier) activateMembership(c *meta.ActivateMembership) meta.Result {
	m, _, key, res := a.existingMembership(c.HashSlot, &c.UserChannel)
	if res != nil {
		return *res
	}
	old := *m
	m.ActivatedAtMs, m.UpdatedAtMs = max(c.TimeMs, 0), c.TimeMs
	return a.writeMembership(c.HashSlot, key, &old, m)
}

func (s reader) getMembership(q *meta.GetMembership) (*meta.Membership, error) {
	return getUserChannel(s, q.HashSlot, meta.TableMembership, &q.UserChannel, meta.DecodeMembership)
}

// listMemberships walks the user's activity index: newest activation first.
func (s reader) listMemberships(q *meta.ListMemberships) (*meta.MembershipPage, error) {
	var afterKey []byte
	if q.After != nil {
		afterKey = meta.MembershipActivityKey(s.cfg.Group, q.HashSlot, q.UID, q.After.AtMs, q.After.ChannelType, q.After.ChannelID)
	}
	items, more, err := listUserRows(s, q.HashSlot, meta.TableMembershipActivity, q.UID, afterKey, q.Limit, meta.DecodeMembership)
	if err != nil {
		return nil, err
	}
	return &meta.MembershipPage{Items: items, More: more}, nil
}
