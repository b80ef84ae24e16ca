package fsm

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// cmdBindingApplier applies the CMD binding commands.
type cmdBindingApplier struct{ *applier }

func (a cmdBindingApplier) cmdBindingKey(hs slotstore.HashSlot, u *meta.UserChannel) []byte {
	return meta.UserChannelKey(a.sm.cfg.Group, hs, meta.TableCmdBinding, u.UID, u.ChannelType, u.ChannelID)
}

func (a cmdBindingApplier) putCmdBinding(c *meta.PutCmdBinding) meta.Result {
	if p := userChannelProblem(&c.UserChannel); p != "" {
		return invalidResult("%s", p)
	}
	key := a.cmdBindingKey(c.HashSlot, &c.UserChannel)
	b := &meta.CmdBinding{UID: c.UID, ChannelType: c.ChannelType, ChannelID: c.ChannelID,
		StartSeq: c.StartSeq, CreatedAtMs: c.TimeMs, UpdatedAtMs: c.TimeMs}
	if old, found := readRow(a.applier, key, meta.DecodeCmdBinding); found {
		b.CreatedAtMs, b.AckSeq = old.CreatedAtMs, old.AckSeq
	}
	return writeRow(a.applier, key, b, &b.Revision, meta.EncodeCmdBinding)
}

func (a cmdBindingApplier) existingCmdBinding(hs slotstore.HashSlot, u *meta.UserChannel) (*meta.CmdBinding, []byte, []byte, *meta.Result) {
	return existingUserChannel(a.applier, hs, meta.TableCmdBinding, u, meta.DecodeCmdBinding, "CMD binding to")
}

func (a cmdBindingApplier) deleteCmdBinding(c *meta.DeleteCmdBinding) meta.Result {
	_, _, key, res := a.existingCmdBinding(c.HashSlot, &c.UserChannel)
	return a.deleteExisting(key, res)
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
	return writeRow(a.applier, key, b, &b.Revision, meta.EncodeCmdBinding)
}

func (s reader) getCmdBinding(q *meta.GetCmdBinding) (*meta.CmdBinding, error) {
	return getUserChannel(s, q.HashSlot, meta.TableCmdBinding, &q.UserChannel, meta.DecodeCmdBinding)
}

// listCmdBindings lists a user's bindings in (channel type, channel id) order.
func (s reader) listCmdBindings(q *meta.ListCmdBindings) (*meta.CmdBindingPage, error) {
	var afterKey []byte
	if q.HasAfter {
		afterKey = meta.UserChannelKey(s.cfg.Group, q.HashSlot, meta.TableCmdBinding, q.UID, q.AfterType, q.AfterID)
	}
	items, more, err := listUserRows(s, q.HashSlot, meta.TableCmdBinding, q.UID, afterKey, q.Limit, meta.DecodeCmdBinding)
	if err != nil {
		return nil, err
	}
	return &meta.CmdBindingPage{Items: items, More: more}, nil
}
