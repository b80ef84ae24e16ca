package fsm

import (
	"github.com/slotmeta/slotmeta/internal/slotstore"
	"github.com/slotmeta/slotmeta/internal/slotstore/meta"
)

// userApplier applies the user commands.
type userApplier struct{ *applier }

func (a userApplier) createUser(c *meta.CreateUser) meta.Result {
	key := meta.UserKey(a.sm.cfg.Group, c.HashSlot, c.User.UID)
	if old, found := readRow(a.applier, key, meta.DecodeUser); found {
		return meta.Result{Code: slotstore.CodeConflict, Message: "user " + c.User.UID + " exists",
			Revision: old.Revision, Value: meta.EncodeUser(old)}
	}
	u := c.User
	u.CreatedAtMs, u.UpdatedAtMs = c.TimeMs, c.TimeMs
	return writeRow(a.applier, key, &u, &u.Revision, meta.EncodeUser)
}

func (a userApplier) putUser(c *meta.PutUser) meta.Result {
	key := meta.UserKey(a.sm.cfg.Group, c.HashSlot, c.User.UID)
	u := c.User
	u.CreatedAtMs, u.UpdatedAtMs = c.TimeMs, c.TimeMs
	if old, found := readRow(a.applier, key, meta.DecodeUser); found {
		u.CreatedAtMs = old.CreatedAtMs
	}
	return writeRow(a.applier, key, &u, &u.Revision, meta.EncodeUser)
}

func (a userApplier) deleteUser(c *meta.DeleteUser) meta.Result {
	key := meta.UserKey(a.sm.cfg.Group, c.HashSlot, c.UID)
	if _, found := readRow(a.applier, key, meta.DecodeUser); !found {
		return meta.Result{Code: slotstore.CodeNotFound, Message: "user " + c.UID + " not found"}
	}
	a.del(key)
	// Everything stored under the user goes in the same batch.
	deviceApplier(a).deleteUserDevices(c.HashSlot, c.UID)
	pluginApplier(a).deleteUserPlugins(c.HashSlot, c.UID)
	return meta.Result{Revision: a.nextRevision()}
}
