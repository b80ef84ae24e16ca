package fsm

import (
	"fmt"

	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

func init() {
	registerApplyMethod(meta.OpPutCmdBinding, cmdBindingApplier.putCmdBinding)
	registerApplyMethod(meta.OpDeleteCmdBinding, cmdBindingApplier.deleteCmdBinding)
	registerApplyMethod(meta.OpAckCmdBinding, cmdBindingApplier.ackCmdBinding)
	registerLookup(meta.QueryGetCmdBinding, reader.getCmdBinding)
	registerLookup(meta.QueryListCmdBindings, reader.listCmdBindings)
}

// cmdBindingApplier applies the CMD binding commands.
type cmdBindingApplier struct{ *applier }

func (a cmdBindingApplier) cmdBindingKey(hs slotstore.HashSlot, u *meta.UserChannel) []byte {
	return meta.UserChannelKey(a.sm.cfg.Group, hs, meta.TableCmdBinding, u.UID, u.ChannelType, u.ChannelID)
}

func (a cmdBindingApplier) readCmdBinding(key []byte) (*meta.CmdBinding, []byte, bool) {
	raw, found := a.get(key)
	if !found {
		return nil, nil, false
	}
	b, err := meta.DecodeCmdBinding(raw)
	if err != nil {
		a.fail(err)
		return nil, nil, false
	}
	return b, raw, true
}

func (a cmdBindingApplier) writeCmdBinding(key []byte, b *meta.CmdBinding) meta.Result {
	b.Revision = a.nextRevision()
	v := meta.EncodeCmdBinding(b)
	a.set(key, v)
	return meta.Result{Revision: b.Revision, Value: v}
}

func (a cmdBindingApplier) putCmdBinding(c *meta.PutCmdBinding) meta.Result {
	if p := userChannelProblem(&c.UserChannel); p != "" {
		return invalidResult("%s", p)
	}
	key := a.cmdBindingKey(c.HashSlot, &c.UserChannel)
	b := &meta.CmdBinding{UID: c.UID, ChannelType: c.ChannelType, ChannelID: c.ChannelID,
		StartSeq: c.StartSeq, CreatedAtMs: c.TimeMs, UpdatedAtMs: c.TimeMs}
	if old, _, found := a.readCmdBinding(key); found {
		b.CreatedAtMs, b.AckSeq = old.CreatedAtMs, old.AckSeq
	}
	return a.writeCmdBinding(key, b)
}

func (a cmdBindingApplier) existingCmdBinding(hs slotstore.HashSlot, u *meta.UserChannel) (*meta.CmdBinding, []byte, []byte, *meta.Result) {
	if p := userChannelProblem(u); p != "" {
		r := invalidResult("%s", p)
		return nil, nil, nil, &r
	}
	key := a.cmdBindingKey(hs, u)
	b, raw, found := a.readCmdBinding(key)
	if !found {
		r := meta.Result{Code: slotstore.CodeNotFound,
			Message: fmt.Sprintf("user %q has no CMD binding to channel %d/%q", u.UID, u.ChannelType, u.ChannelID)}
		return nil, nil, nil, &r
	}
	return b, raw, key, nil
}

func (a cmdBindingApplier) deleteCmdBinding(c *meta.DeleteCmdBinding) meta.Result {
	_, _, key, res := a.existingCmdBinding(c.HashSlot, &c.UserChannel)
	if res != nil {
		return *res
	}
	a.del(key)
	return meta.Result{Revision: a.nextRevision()}
}

func (a cmdBindingApplier) ackCmdBinding(c *meta.AckCmdBinding) meta.Result {
	b, raw, key, res := a.existingCmdBinding(c.HashSlot, &c.UserChannel)
	if res != nil {
		return *res
	}
	if c.AckSeq <= b.AckSeq {
		return unchangedResult(b.Revision, raw)
	}
	b.AckSeq, b.UpdatedAtMs = c.AckSeq, c.TimeMs
	return a.writeCmdBinding(key, b)
}

func (s reader) getCmdBinding(q *meta.GetCmdBinding) (*meta.CmdBinding, error) {
	if err := s.checkRouted(q.HashSlot, q.UID); err != nil {
		return nil, err
	}
	raw, found, err := s.get(meta.UserChannelKey(s.cfg.Group, q.HashSlot, meta.TableCmdBinding, q.UID, q.ChannelType, q.ChannelID))
	if err != nil || !found {
		return nil, err
	}
	return meta.DecodeCmdBinding(raw)
}

// listCmdBindings lists a user's bindings in (channel type, channel id) order.
func (s reader) listCmdBindings(q *meta.ListCmdBindings) (*meta.CmdBindingPage, error) {
	if err := s.checkRouted(q.HashSlot, q.UID); err != nil {
		return nil, err
	}
	g := s.cfg.Group
	prefix := meta.UserTablePrefix(g, q.HashSlot, meta.TableCmdBinding, q.UID)
	lower := prefix
	if q.HasAfter {
		lower = append(meta.UserChannelKey(g, q.HashSlot, meta.TableCmdBinding, q.UID, q.AfterType, q.AfterID), 0)
	}
	page := &meta.CmdBindingPage{}
	err := s.scanValues(lower, meta.PrefixEnd(prefix), pageLimit(q.Limit), &page.More, func(v []byte) error {
		b, err := meta.DecodeCmdBinding(v)
		if err == nil {
			page.Items = append(page.Items, b)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	return page, nil
}
