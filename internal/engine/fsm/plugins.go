package fsm

import (
	"fmt"

	"github.com/slotmeta/slotmeta/internal/engine/store"
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// pluginApplier applies a user's plugin bindings.
type pluginApplier struct{ *applier }

// pluginIndexValue is the value of an index row: the row is the data.
var pluginIndexValue = []byte{}

func (a pluginApplier) putPlugin(c *meta.PutPlugin) meta.Result {
	if c.PluginNo == "" {
		return meta.Result{Code: slotstore.CodeInvalidArgument, Message: "empty plugin number"}
	}
	if !a.userExists(c.HashSlot, c.UID) {
		return userNotFound(c.UID)
	}
	g := a.sm.cfg.Group
	key := meta.PluginKey(g, c.HashSlot, c.UID, c.PluginNo)
	b := &meta.PluginBinding{UID: c.UID, PluginNo: c.PluginNo, Config: c.Config, CreatedAtMs: c.TimeMs, UpdatedAtMs: c.TimeMs}
	if old, found := readRow(a.applier, key, meta.DecodePluginBinding); found {
		b.CreatedAtMs = old.CreatedAtMs
	} else {
		n := 0
		a.eachInBatch(meta.PluginPrefix(g, c.HashSlot, c.UID), func(_, _ []byte) bool {
			n++
			return n < meta.MaxPluginsPerUser
		})
		if n >= meta.MaxPluginsPerUser {
			return meta.Result{Code: slotstore.CodeConflict,
				Message: fmt.Sprintf("user %q already has %d plugin bindings, the most allowed", c.UID, meta.MaxPluginsPerUser)}
		}
	}
	r := writeRow(a.applier, key, b, &b.Revision, meta.EncodePluginBinding)
	a.set(meta.PluginIndexKey(g, c.HashSlot, c.PluginNo, c.UID), pluginIndexValue)
	return r
}

func (a pluginApplier) deletePlugin(c *meta.DeletePlugin) meta.Result {
	g := a.sm.cfg.Group
	key := meta.PluginKey(g, c.HashSlot, c.UID, c.PluginNo)
	if _, found := a.get(key); !found {
		return meta.Result{Code: slotstore.CodeNotFound, Message: fmt.Sprintf("user %q is not bound to plugin %q", c.UID, c.PluginNo)}
	}
	a.del(key)
	a.del(meta.PluginIndexKey(g, c.HashSlot, c.PluginNo, c.UID))
	return meta.Result{Revision: a.nextRevision()}
}

// deleteUserPlugins deletes every binding of uid and its index row (part of
// deleting the user). The index rows are under other prefixes, so the
// bindings are walked through the batch (at most MaxPluginsPerUser) and
// each binding and index row is deleted.
func (a pluginApplier) deleteUserPlugins(hs slotstore.HashSlot, uid string) {
	g := a.sm.cfg.Group
	prefix := meta.PluginPrefix(g, hs, uid)
	a.eachInBatch(prefix, func(k, _ []byte) bool {
		a.del(k)
		a.del(meta.PluginIndexKey(g, hs, string(k[len(prefix):]), uid))
		return true
	})
}

// listUserPlugins answers meta.ListUserPlugins: *meta.PluginPage, nil when
// the user does not exist.
func (s reader) listUserPlugins(q *meta.ListUserPlugins) (*meta.PluginPage, error) {
	if err := s.checkOwned(q.HashSlot); err != nil {
		return nil, err
	}
	g := s.cfg.Group
	if _, found, err := s.get(meta.UserKey(g, q.HashSlot, q.UID)); err != nil || !found {
		return nil, err
	}
	var lower []byte
	if q.AfterPlugin != "" {
		lower = after(meta.PluginKey(g, q.HashSlot, q.UID, q.AfterPlugin))
	}
	page := &meta.PluginPage{}
	var err error
	page.Bindings, page.More, err = appendPage(s.db, meta.PluginPrefix(g, q.HashSlot, q.UID), lower, scanLimit(q.Limit), page.Bindings, meta.DecodePluginBinding)
	if err != nil {
		return nil, err
	}
	return page, nil
}

// scanPluginUsers answers meta.ScanPluginUsers: the bindings to a plugin in
// a run of hash slots, in (slot, uid) order, from the index rows.
func (s reader) scanPluginUsers(q *meta.ScanPluginUsers) (*meta.PluginPage, error) {
	if q.PluginNo == "" {
		return nil, slotstore.Errorf(slotstore.CodeInvalidArgument, "empty plugin number")
	}
	if err := s.checkOwnedRange(q.FromSlot, q.ToSlot); err != nil {
		return nil, err
	}
	g := s.cfg.Group
	limit := scanLimit(q.Limit)
	page := &meta.PluginPage{}
	// Index rows and bindings are read from one snapshot, so they agree.
	snap := s.db.NewSnapshot()
	defer snap.Close()
	for hs := q.FromSlot; hs <= q.ToSlot && !page.More; hs++ {
		prefix := meta.PluginIndexPrefix(g, hs, q.PluginNo)
		var lower []byte
		if hs == q.FromSlot && q.AfterUID != "" {
			lower = after(meta.PluginIndexKey(g, hs, q.PluginNo, q.AfterUID))
		}
		err := scanReader(snap, prefix, lower, func(k, _ []byte) (bool, error) {
			if len(page.Bindings) == limit {
				page.More = true
				return false, nil
			}
			uid := string(k[len(prefix):])
			b := &meta.PluginBinding{UID: uid, PluginNo: q.PluginNo}
			raw, found, err := store.Get(snap, meta.PluginKey(g, hs, uid, q.PluginNo))
			if err != nil {
				return false, err
			}
			if found { // always, unless the index and the bindings disagree
				if b, err = meta.DecodePluginBinding(raw); err != nil {
					return false, err
				}
			}
			page.Bindings = append(page.Bindings, b)
			return true, nil
		})
		if err != nil {
			return nil, err
		}
	}
	return page, nil
}
