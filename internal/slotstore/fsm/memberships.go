package fsm

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

func init() {
	registerApplyMethod(meta.OpPutMembership, membershipApplier.putMembership)
	registerApplyMethod(meta.OpDeleteMembership, membershipApplier.deleteMembership)
	registerApplyMethod(meta.OpReadMembership, membershipApplier.readMembershipTo)
	registerApplyMethod(meta.OpHideMembership, membershipApplier.hideMembership)
	registerApplyMethod(meta.OpActivateMembership, membershipApplier.activateMembership)
	registerLookup(meta.QueryGetMembership, reader.getMembership)
	registerLookup(meta.QueryListMemberships, reader.listMemberships)
}

// membershipApplier applies the membership commands.
type membershipApplier struct{ *applier }

// invalidResult is the answer to a command no API would have built.
func invalidResult(format string, args ...any) meta.Result {
	return meta.Result{Code: slotstore.CodeInvalidArgument, Message: fmt.Sprintf(format, args...)}
}

// userChannelProblem checks the identity of a user's row about a channel.
func userChannelProblem(u *meta.UserChannel) string {
	if u.UID == "" {
		return "uid must not be empty"
	}
	return meta.ChannelRefProblem(u.ChannelType, u.ChannelID)
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

// readMembership reads the membership at key.
func (a membershipApplier) readMembership(key []byte) (*meta.Membership, []byte, bool) {
	raw, found := a.get(key)
	if !found {
		return nil, nil, false
	}
	m, err := meta.DecodeMembership(raw)
	if err != nil {
		a.fail(err)
		return nil, nil, false
	}
	return m, raw, true
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
	old, _, found := a.readMembership(key)
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
	if p := userChannelProblem(u); p != "" {
		r := invalidResult("%s", p)
		return nil, nil, nil, &r
	}
	key := a.membershipKey(hs, u)
	m, raw, found := a.readMembership(key)
	if !found {
		r := meta.Result{Code: slotstore.CodeNotFound,
			Message: fmt.Sprintf("user %q has no membership of channel %d/%q", u.UID, u.ChannelType, u.ChannelID)}
		return nil, nil, nil, &r
	}
	return m, raw, key, nil
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
	m, raw, key, res := a.existingMembership(c.HashSlot, &c.UserChannel)
	if res != nil {
		return *res
	}
	if c.ReadSeq <= m.ReadSeq {
		return unchangedResult(m.Revision, raw)
	}
	old := *m
	m.ReadSeq, m.UpdatedAtMs = c.ReadSeq, c.TimeMs
	return a.writeMembership(c.HashSlot, key, &old, m)
}

func (a membershipApplier) hideMembership(c *meta.HideMembership) meta.Result {
	m, raw, key, res := a.existingMembership(c.HashSlot, &c.UserChannel)
	if res != nil {
		return *res
	}
	if c.ToSeq <= m.DeletedToSeq {
		return unchangedResult(m.Revision, raw)
	}
	old := *m
	m.DeletedToSeq, m.UpdatedAtMs = c.ToSeq, c.TimeMs
	return a.writeMembership(c.HashSlot, key, &old, m)
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

// checkRouted checks that a query's hash slot is its route key's and that
// this group owns it.
func (s reader) checkRouted(hs slotstore.HashSlot, routeKey string) error {
	if got := slotstore.HashSlotOfString(routeKey); got != hs {
		return slotstore.Errorf(slotstore.CodeInvalidArgument, "route key hashes to slot %d, query names %d", got, hs)
	}
	return s.checkOwned(hs)
}

// pageLimit bounds a listing's page.
func pageLimit(n int) int {
	if n <= 0 || n > maxScanLimit {
		return maxScanLimit
	}
	return n
}

func (s reader) getMembership(q *meta.GetMembership) (*meta.Membership, error) {
	if err := s.checkRouted(q.HashSlot, q.UID); err != nil {
		return nil, err
	}
	raw, found, err := s.get(meta.UserChannelKey(s.cfg.Group, q.HashSlot, meta.TableMembership, q.UID, q.ChannelType, q.ChannelID))
	if err != nil || !found {
		return nil, err
	}
	return meta.DecodeMembership(raw)
}

// listMemberships walks the user's activity index: newest activation first.
func (s reader) listMemberships(q *meta.ListMemberships) (*meta.MembershipPage, error) {
	if err := s.checkRouted(q.HashSlot, q.UID); err != nil {
		return nil, err
	}
	g := s.cfg.Group
	prefix := meta.UserTablePrefix(g, q.HashSlot, meta.TableMembershipActivity, q.UID)
	lower := prefix
	if q.After != nil {
		lower = append(meta.MembershipActivityKey(g, q.HashSlot, q.UID, q.After.AtMs, q.After.ChannelType, q.After.ChannelID), 0)
	}
	page := &meta.MembershipPage{}
	err := s.scanValues(lower, meta.PrefixEnd(prefix), pageLimit(q.Limit), &page.More, func(v []byte) error {
		m, err := meta.DecodeMembership(v)
		if err == nil {
			page.Items = append(page.Items, m)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}

// scanValues calls each with the values of [lower, upper) in key order,
// at most limit of them; *more says whether another one followed.
func (s reader) scanValues(lower, upper []byte, limit int, more *bool, each func([]byte) error) error {
	it, err := s.db.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return err
	}
	n := 0
	for it.First(); it.Valid(); it.Next() {
		if n == limit {
			*more = true
			break
		}
		if err := each(it.Value()); err != nil {
			_ = it.Close()
			return err
		}
		n++
	}
	return it.Close()
}
