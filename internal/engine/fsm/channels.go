package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// channelApplier applies the channel commands: the channel rows and their lists.
type channelApplier struct{ *applier }

// channelLists are the lists stored with a channel, deleted with it.
var channelLists = []meta.ChannelList{meta.ListSubscribers, meta.ListDenylist, meta.ListAllowlist}

// badChannel refuses a channel identity the API would have refused: a
// command in the log need not have come through the API.
func badChannel(channelType uint8, channelID string) (meta.Result, bool) {
	if p := meta.ChannelRefProblem(channelType, channelID); p != "" {
		return meta.Result{Code: slotstore.CodeInvalidArgument, Message: p}, true
	}
	return meta.Result{}, false
}

func channelNotFound(channelType uint8, channelID string) meta.Result {
	return meta.Result{Code: slotstore.CodeNotFound, Message: fmt.Sprintf("channel %d/%q not found", channelType, channelID)}
}

func (a channelApplier) channelKey(hs slotstore.HashSlot, channelType uint8, channelID string) []byte {
	return meta.ChannelKey(a.sm.cfg.Group, hs, meta.TableChannel, channelType, channelID)
}

func (a channelApplier) writeChannel(key []byte, ch *meta.Channel) meta.Result {
	return writeRow(a.applier, key, ch, &ch.Revision, meta.EncodeChannel)
}

func (a channelApplier) createChannel(c *meta.CreateChannel) meta.Result {
	if r, bad := badChannel(c.Channel.Type, c.Channel.ID); bad {
		return r
	}
	key := a.channelKey(c.HashSlot, c.Channel.Type, c.Channel.ID)
	if old, found := readRow(a.applier, key, meta.DecodeChannel); found {
		return meta.Result{Code: slotstore.CodeConflict, Message: fmt.Sprintf("channel %d/%q exists", old.Type, old.ID),
			Revision: old.Revision, Value: meta.EncodeChannel(old)}
	}
	ch := &meta.Channel{ChannelInfo: c.Channel, CreatedAtMs: c.TimeMs, UpdatedAtMs: c.TimeMs}
	return a.writeChannel(key, ch)
}

// putChannel replaces a channel's flags and extra; its lists, counts and
// creation time stay.
func (a channelApplier) putChannel(c *meta.PutChannel) meta.Result {
	if r, bad := badChannel(c.Channel.Type, c.Channel.ID); bad {
		return r
	}
	key := a.channelKey(c.HashSlot, c.Channel.Type, c.Channel.ID)
	ch, found := readRow(a.applier, key, meta.DecodeChannel)
	if !found {
		ch = &meta.Channel{CreatedAtMs: c.TimeMs}
	}
	ch.ChannelInfo, ch.UpdatedAtMs = c.Channel, c.TimeMs
	return a.writeChannel(key, ch)
}

// deleteChannel deletes the channel row and its three lists in the batch,
// each list with one range deletion.
func (a channelApplier) deleteChannel(c *meta.DeleteChannel) meta.Result {
	key := a.channelKey(c.HashSlot, c.ChannelType, c.ChannelID)
	if _, found := a.get(key); !found {
		return channelNotFound(c.ChannelType, c.ChannelID)
	}
	a.del(key)
	// The subscribers leave with the channel: their memberships owe a
	// projection too, in chunks of at most a list call's size.
	subs := meta.ChannelListPrefix(a.sm.cfg.Group, c.HashSlot, meta.ListSubscribers.Table(), c.ChannelType, c.ChannelID)
	var uids []string
	rev := a.nextRevision()
	ch := &meta.Channel{ChannelInfo: meta.ChannelInfo{Type: c.ChannelType, ID: c.ChannelID}}
	flush := func() {
		if len(uids) > 0 {
			a.appendOutbox(c.HashSlot, a.nextRevision(), ch, false, uids)
			uids = nil
		}
	}
	a.eachInBatch(subs, func(k, _ []byte) bool {
		uids = append(uids, string(k[len(subs):]))
		if len(uids) == 1000 {
			flush()
		}
		return true
	})
	flush()
	for _, l := range channelLists {
		a.clearRows(meta.ChannelListPrefix(a.sm.cfg.Group, c.HashSlot, l.Table(), c.ChannelType, c.ChannelID))
	}
	return meta.Result{Revision: rev}
}

func (a channelApplier) addChannelMembers(c *meta.AddChannelMembers) meta.Result {
	return a.changeMembers(&c.Header, &c.ChannelMembers, true)
}

func (a channelApplier) removeChannelMembers(c *meta.RemoveChannelMembers) meta.Result {
	return a.changeMembers(&c.Header, &c.ChannelMembers, false)
}

// changeMembers adds (add) or removes uids of one list of a channel and
// keeps the list's count on the channel row in step, in the same batch.
// Every uid is looked up through the batch, so a uid repeated in one
// command (or in two commands of one Update) counts once. A command that
// changes nothing writes nothing.
func (a channelApplier) changeMembers(h *meta.Header, m *meta.ChannelMembers, add bool) meta.Result {
	if r, bad := badChannel(m.ChannelType, m.ChannelID); bad {
		return r
	}
	for _, uid := range m.UIDs {
		if uid == "" {
			return meta.Result{Code: slotstore.CodeInvalidArgument, Message: "empty uid"}
		}
	}
	key := a.channelKey(h.HashSlot, m.ChannelType, m.ChannelID)
	ch, res := a.channelForList(key, m.ChannelType, m.ChannelID, m.List)
	if res != nil {
		return *res
	}
	g := a.sm.cfg.Group
	var changed uint64
	var changedUIDs []string
	for _, uid := range m.UIDs {
		mk := meta.ChannelMemberKey(g, h.HashSlot, m.List.Table(), m.ChannelType, m.ChannelID, uid)
		_, exists := a.get(mk)
		switch {
		case add && !exists:
			a.set(mk, meta.EncodeChannelMember(&meta.ChannelMember{UID: uid, AddedAtMs: h.TimeMs}))
			changed++
			changedUIDs = append(changedUIDs, uid)
		case !add && exists:
			a.del(mk)
			changed++
			changedUIDs = append(changedUIDs, uid)
		}
	}
	count := ch.Count(m.List)
	if changed == 0 {
		return meta.Result{Revision: ch.Revision, Value: meta.EncodeListChange(&meta.ListChange{Count: *count})}
	}
	a.countChange(ch, m.List, changed, add, h.TimeMs)
	var projected []string
	if m.List == meta.ListSubscribers {
		projected = changedUIDs
		ch.PendingProjection++
	}
	r := a.writeChannel(key, ch)
	if projected != nil {
		a.appendOutbox(h.HashSlot, r.Revision, ch, add, projected)
	}
	r.Value = meta.EncodeListChange(&meta.ListChange{Changed: changed, Count: *count})
	return r
}

// MaxPendingProjection bounds a channel's outbox: while this many of its
// subscriber changes wait for their membership projection, further changes
// are refused as busy (503 with Retry-After; nothing is written) until the
// projector catches up. It keeps the outbox, and the work a lagging projector
// owes, bounded per channel.
const MaxPendingProjection = 4096

// channelForList reads the channel at key whose list l a command changes,
// or answers why it cannot: there is no such channel, or l is the
// subscribers and the channel's projection backlog is full.
func (a channelApplier) channelForList(key []byte, channelType uint8, channelID string, l meta.ChannelList) (*meta.Channel, *meta.Result) {
	ch, found := readRow(a.applier, key, meta.DecodeChannel)
	if !found {
		r := channelNotFound(channelType, channelID)
		return nil, &r
	}
	if l == meta.ListSubscribers && ch.PendingProjection >= MaxPendingProjection {
		r := meta.Result{Code: slotstore.CodeBusy, Revision: ch.Revision,
			Message: fmt.Sprintf("channel %d/%q has %d subscriber changes waiting for their membership projection; retry later", ch.Type, ch.ID, ch.PendingProjection)}
		return nil, &r
	}
	return ch, nil
}

// appendOutbox records, in the same batch as the subscriber change, the
// projection the users' groups owe. seq is a group revision of this change
// (unique, growing) and doubles as the projection's version: unlike the
// channel's own counter it keeps growing when a channel is deleted and
// created again, so an old projection can never overtake a new one.
func (a channelApplier) appendOutbox(hs slotstore.HashSlot, seq uint64, ch *meta.Channel, add bool, uids []string) {
	rec := &meta.OutboxRecord{ChannelType: ch.Type, ChannelID: ch.ID, Version: seq, Add: add, UIDs: uids}
	a.set(meta.OutboxKey(a.sm.cfg.Group, hs, seq), meta.EncodeOutboxRecord(rec))
}

// countChange applies n additions or removals of list l to the channel row.
func (a channelApplier) countChange(ch *meta.Channel, l meta.ChannelList, n uint64, add bool, timeMs int64) {
	count := ch.Count(l)
	if add {
		*count += n
	} else {
		*count -= min(n, *count)
	}
	if l == meta.ListSubscribers {
		ch.SubscriberVersion++
	}
	ch.UpdatedAtMs = timeMs
}

func (a channelApplier) deleteChannelMember(c *meta.DeleteChannelMember) meta.Result {
	if r, bad := badChannel(c.ChannelType, c.ChannelID); bad {
		return r
	}
	key := a.channelKey(c.HashSlot, c.ChannelType, c.ChannelID)
	ch, res := a.channelForList(key, c.ChannelType, c.ChannelID, c.List)
	if res != nil {
		return *res
	}
	mk := meta.ChannelMemberKey(a.sm.cfg.Group, c.HashSlot, c.List.Table(), c.ChannelType, c.ChannelID, c.UID)
	if _, exists := a.get(mk); !exists {
		return meta.Result{Code: slotstore.CodeNotFound,
			Message: fmt.Sprintf("%q is not in the %s of channel %d/%q", c.UID, c.List, c.ChannelType, c.ChannelID)}
	}
	a.del(mk)
	a.countChange(ch, c.List, 1, false, c.TimeMs)
	if c.List == meta.ListSubscribers {
		ch.PendingProjection++
	}
	r := a.writeChannel(key, ch)
	if c.List == meta.ListSubscribers {
		a.appendOutbox(c.HashSlot, r.Revision, ch, false, []string{c.UID})
	}
	r.Value = meta.EncodeListChange(&meta.ListChange{Changed: 1, Count: *ch.Count(c.List)})
	return r
}

// getChannel answers meta.GetChannel: *meta.Channel or a nil one.
func (s reader) getChannel(q *meta.GetChannel) (*meta.Channel, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	return getRow(s, meta.ChannelKey(s.cfg.Group, q.HashSlot, meta.TableChannel, q.ChannelType, q.ChannelID), meta.DecodeChannel)
}

// scanChannelList answers meta.ScanChannelList: *meta.ChannelMemberPage, nil
// when the channel does not exist. The channel row and the list are read
// from one snapshot.
func (s reader) scanChannelList(q *meta.ScanChannelList) (*meta.ChannelMemberPage, error) {
	if !q.List.Valid() {
		return nil, slotstore.Errorf(slotstore.CodeInvalidArgument, "unknown channel list %d", q.List)
	}
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	g := s.cfg.Group
	snap := s.db.NewSnapshot()
	defer snap.Close()
	if _, found, err := store.Get(snap, meta.ChannelKey(g, q.HashSlot, meta.TableChannel, q.ChannelType, q.ChannelID)); err != nil || !found {
		return nil, err
	}
	var lower []byte
	if q.AfterUID != "" {
		lower = after(meta.ChannelMemberKey(g, q.HashSlot, q.List.Table(), q.ChannelType, q.ChannelID, q.AfterUID))
	}
	page := &meta.ChannelMemberPage{}
	var err error
	page.Members, page.More, err = appendPage(snap, meta.ChannelListPrefix(g, q.HashSlot, q.List.Table(), q.ChannelType, q.ChannelID), lower,
		scanLimit(q.Limit), page.Members, meta.DecodeChannelMember)
	if err != nil {
		return nil, err
	}
	return page, nil
}

// getChannelMember answers meta.GetChannelMember: *meta.ChannelMember or a
// nil one.
func (s reader) getChannelMember(q *meta.GetChannelMember) (*meta.ChannelMember, error) {
	if !q.List.Valid() {
		return nil, slotstore.Errorf(slotstore.CodeInvalidArgument, "unknown channel list %d", q.List)
	}
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	return getRow(s, meta.ChannelMemberKey(s.cfg.Group, q.HashSlot, q.List.Table(), q.ChannelType, q.ChannelID, q.UID), meta.DecodeChannelMember)
}
