package fsm

import (
	"slotmeta/internal/slotstore"
	"slotmeta/internal/slotstore/meta"
)

func init() {
	registerApplier(meta.OpCreateUser, func(a *applier, c meta.Command) meta.Result { return a.createUser(c.(*meta.CreateUser)) })
	registerApplier(meta.OpPutUser, func(a *applier, c meta.Command) meta.Result { return a.putUser(c.(*meta.PutUser)) })
	registerApplier(meta.OpDeleteUser, func(a *applier, c meta.Command) meta.Result { return a.deleteUser(c.(*meta.DeleteUser)) })
	registerLookup(meta.QueryGetUser, (*StateMachine).getUser)
	registerLookup(meta.QueryScanUsers, (*StateMachine).scanUsers)
}

func (a *applier) readUser(key []byte) (*meta.User, bool) {
	raw, found := a.get(key)
	if !found {
		return nil, false
	}
	u, err := meta.DecodeUser(raw)
	if err != nil {
		a.fail(err)
		return nil, false
	}
	return u, true
}

func (a *applier) writeUser(key []byte, u *meta.User) meta.Result {
	u.Revision = a.nextRevision()
	v := meta.EncodeUser(u)
	a.set(key, v)
	return meta.Result{Revision: u.Revision, Value: v}
}

func (a *applier) createUser(c *meta.CreateUser) meta.Result {
	key := meta.UserKey(a.sm.cfg.Group, c.HashSlot, c.User.UID)
	if old, found := a.readUser(key); found {
		return meta.Result{Code: slotstore.CodeConflict, Message: "user " + c.User.UID + " exists",
			Revision: old.Revision, Value: meta.EncodeUser(old)}
	}
	u := c.User
	u.CreatedAtMs, u.UpdatedAtMs = c.TimeMs, c.TimeMs
	return a.writeUser(key, &u)
}

func (a *applier) putUser(c *meta.PutUser) meta.Result {
	key := meta.UserKey(a.sm.cfg.Group, c.HashSlot, c.User.UID)
	u := c.User
	u.CreatedAtMs, u.UpdatedAtMs = c.TimeMs, c.TimeMs
	if old, found := a.readUser(key); found {
		u.CreatedAtMs = old.CreatedAtMs
	}
	return a.writeUser(key, &u)
}

func (a *applier) deleteUser(c *meta.DeleteUser) meta.Result {
	key := meta.UserKey(a.sm.cfg.Group, c.HashSlot, c.UID)
	if _, found := a.readUser(key); !found {
		return meta.Result{Code: slotstore.CodeNotFound, Message: "user " + c.UID + " not found"}
	}
	a.del(key)
	// Everything stored under the user goes in the same batch.
	a.deleteUserDevices(c.HashSlot, c.UID)
	a.deleteUserPlugins(c.HashSlot, c.UID)
	return meta.Result{Revision: a.nextRevision()}
}
