package fsm

import (
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// eventApplier applies a channel's message events.
type eventApplier struct{ *applier }

// eventProblem checks an event's client fields.
func eventProblem(ev *meta.ChannelEvent) string {
	if p := meta.ChannelRefProblem(ev.ChannelType, ev.ChannelID); p != "" {
		return p
	}
	for _, f := range []struct {
		name     string
		v        string
		required bool
		max      int
	}{
		{"client_msg_no", ev.ClientMsgNo, true, meta.MaxEventIDBytes},
		{"event_key", ev.EventKey, true, meta.MaxEventIDBytes},
		{"event_id", ev.EventID, true, meta.MaxEventIDBytes},
		{"event_type", ev.EventType, true, meta.MaxEventTypeBytes},
		{"status", ev.Status, false, meta.MaxEventTypeBytes},
	} {
		if (f.required && f.v == "") || len(f.v) > f.max {
			return f.name + " has a bad length"
		}
	}
	return ""
}

// appendEvent appends to the channel's bounded projection: the next seq,
// and the oldest events beyond the group's capacity deleted in this batch.
func (a eventApplier) appendEvent(c *meta.AppendEvent) meta.Result {
	if p := eventProblem(&c.Event); p != "" {
		return invalidResult("%s", p)
	}
	prefix := meta.ChannelListPrefix(a.sm.cfg.Group, c.HashSlot, meta.TableEvent, c.Event.ChannelType, c.Event.ChannelID)
	seq := a.pushWindow(prefix, a.readWindow(prefix), uint64(a.sm.cfg.EventCapacity))
	ev := c.Event
	ev.Seq, ev.CreatedAtMs = seq, c.TimeMs
	return writeRow(a.applier, seqKey(prefix, seq), &ev, &ev.Revision, meta.EncodeChannelEvent)
}

// listEvents lists a channel's events newest first.
func (s reader) listEvents(q *meta.ListEvents) (*meta.EventPage, error) {
	if err := s.checkRouted(q.HashSlot, q.ChannelID); err != nil {
		return nil, err
	}
	prefix := meta.ChannelListPrefix(s.cfg.Group, q.HashSlot, meta.TableEvent, q.ChannelType, q.ChannelID)
	page := &meta.EventPage{}
	w, items, more, err := seqPage(s, prefix, q.BeforeSeq, scanLimit(q.Limit), meta.DecodeChannelEvent)
	if err != nil {
		return nil, err
	}
	page.Items, page.More, page.Count, page.LastSeq = items, more, w.Count(), w.Last
	return page, nil
}
